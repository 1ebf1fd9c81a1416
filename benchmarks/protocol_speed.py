"""How fast frames go through the protocol: an 8-GPU sample encoded, decoded and validated,
and what sealing adds (a connection with a secret; see dltui/protocol/seal.py).

The baselines, measured in the same run, are msgpack alone (packb / unpackb of the same map)
and the unsealed frame: what the framing, the typed validation and the seal each add. The
client decodes every sample of every server, so this bounds how many servers one client can
follow; the agent seals each sample once per client.

    python benchmarks/protocol_speed.py [--gpus 8] [--seconds 2]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import msgpack

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dltui.protocol.fields import GPU_FIELDS, HOST_FIELDS
from dltui.protocol.framing import FrameDecoder, encode_frame
from dltui.protocol.messages import Sample
from dltui.protocol.samples import GpuSample, HostSample
from dltui.protocol.seal import TAG_SIZE, seals
from dltui.protocol.wire import from_wire, to_wire


def make_sample(gpus: int) -> Sample:
    values = {name: 1234.5 for name in GPU_FIELDS}
    host = HostSample({name: 10.0 for name in HOST_FIELDS}, [12.5] * 64)
    return Sample(1, 1.7e9, 100.0, host, [GpuSample(i, "ok", dict(values)) for i in range(gpus)])


def rate(work: Callable[[], object], seconds: float) -> float:
    """Calls per second of `work`, over about `seconds`."""
    count, began = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - began) < seconds:
        for _ in range(100):
            work()
        count += 100
    return count / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=2.0)
    args = parser.parse_args()
    sample = make_sample(args.gpus)
    wire = to_wire(sample)
    body = msgpack.packb(wire)
    frame = encode_frame(wire)
    decoder = FrameDecoder()

    def decode() -> Sample:
        (obj,) = decoder.feed(frame)
        return from_wire(obj)

    assert decode() == sample

    # The two ends of one sealed connection: the agent seals, the client opens, in step.
    def agent_seal():
        return seals(b"s" * 32, b"c" * 32, b"n" * 32, b"auth", b"welcome")[1]

    sealer, opener, alone = agent_seal(), agent_seal(), agent_seal()
    sealed_decoder = FrameDecoder()
    sealed_decoder.opener, sealed_decoder.overhead = opener.open, TAG_SIZE

    def decode_sealed() -> Sample:
        (obj,) = sealed_decoder.feed(sealer.frame(frame))
        return from_wire(obj)

    assert decode_sealed() == sample
    figures = {
        "msgpack packb (baseline)": rate(lambda: msgpack.packb(wire), args.seconds),
        "encode: to_wire + frame": rate(lambda: encode_frame(to_wire(sample)), args.seconds),
        "seal an encoded frame": rate(lambda: alone.frame(frame), args.seconds),
        "msgpack unpackb (baseline)": rate(lambda: msgpack.unpackb(body), args.seconds),
        "decode: frame + validate": rate(decode, args.seconds),
        "seal + open + decode": rate(decode_sealed, args.seconds),
    }
    print(f"{args.gpus}-GPU sample frame, {len(frame)} bytes")
    for name, per_second in figures.items():
        print(f"  {name:28} {per_second:10,.0f} frames/s  {1e6 / per_second:7.1f} µs/frame")
    slowdown = figures["msgpack unpackb (baseline)"] / figures["decode: frame + validate"]
    print(f"  decode cost vs msgpack alone: {slowdown:.1f}x")
    sealed = figures["decode: frame + validate"] / figures["seal + open + decode"]
    print(f"  sealed vs unsealed, both ends: {sealed:.2f}x")
    servers = figures["decode: frame + validate"] / 10
    print(f"  one core decodes {servers:,.0f} servers of {args.gpus} GPUs at 10 Hz")


if __name__ == "__main__":
    main()
