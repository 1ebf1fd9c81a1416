from __future__ import annotations

import msgpack
import pytest

from dltui.protocol.bench_plans import KernelPlan
from dltui.protocol.bench_results import KernelResult, ModelResult
from dltui.protocol.errors import ProtocolError
from dltui.protocol.framing import FrameDecoder, encode_frame
from dltui.protocol.messages import (
    MESSAGE_TYPES,
    Auth,
    Bye,
    Cancel,
    ConnectionState,
    ErrorMessage,
    Event,
    Hello,
    JobEnd,
    JobProgress,
    JobResult,
    Ping,
    Pong,
    Run,
    Sample,
    Subscribe,
    Welcome,
)
from dltui.protocol.samples import GpuProcess, GpuSample, HostSample, MigSample
from dltui.protocol.wire import from_wire, to_plain, to_wire
from tests.fakes.messages import INVENTORY, RESULT

SAMPLE = Sample(
    seq=3,
    wall=1.7e9,
    mono=12.5,
    host=HostSample({"cpu": 12.5, "mem_used": 2**33}, [1.0, 99.0]),
    gpus=[
        GpuSample(0, "ok", {"util_gpu": 100, "power": 691.2}, {"temp": "Unknown"}),
        GpuSample(1, "lost", {}),
        GpuSample(2, "ok", {}, processes=[GpuProcess(4242, 2**33, "python"), GpuProcess(7)]),
        GpuSample(
            3,
            "ok",
            {},
            processes=[
                GpuProcess(
                    81,
                    2**30,
                    "python",
                    "alice",
                    "python train.py",
                    1.7e9,
                    99.5,
                    2**31,
                    87.0,
                    12.0,
                    1,
                    "3f2a",
                    "docker",
                    job="41233",
                    gpu_instance=1,
                ),
            ],
            mig=[MigSample(1, {"mem_used": 2**30, "sm_active": 50.0})],
        ),
    ],
)
EVERY_MESSAGE = [
    Hello(1, "abc", "gpu-01", b"\x01" * 32),
    Hello(1, "abc", "gpu-01", None),
    Auth(1, "laptop", b"n" * 32, b"m" * 32),
    Welcome("abc", INVENTORY, 10.0, 1.7e9, 5.0, None),
    Subscribe(1, 10.0),
    SAMPLE,
    Ping(2, 1),
    Pong(1, 1.7e9, 5.0, 3),
    ErrorMessage("protocol", "bad"),
    Bye("done", 4),
    ConnectionState("offline", 1.7e9, "refused"),
    Run(5, "job1", KernelPlan(framework="tensorflow", kinds=["gemm"], iterations=10)),
    Cancel(6, "job1"),
    JobProgress("job1", 3, 10, "gemm 1760x16x1760 NN fp32"),
    JobResult("job1", RESULT),
    JobEnd("job1", "failed", "the worker was killed by SIGKILL", 1.7e9),
    Event(3, "xid", "critical", "XID 79: GPU has fallen off the bus", 1.7e9, gpu=0, value=79),
]


def test_every_message_type_is_covered():
    assert {m.TYPE for m in EVERY_MESSAGE} == set(MESSAGE_TYPES)


@pytest.mark.parametrize("message", EVERY_MESSAGE, ids=lambda m: m.TYPE)
def test_round_trip_through_frames(message):
    (decoded,) = FrameDecoder().feed(encode_frame(to_wire(message)))
    assert from_wire(decoded) == message


def test_unknown_fields_are_ignored_for_forward_compatibility():
    wire = to_wire(Ping(1, 2)) | {"future": [1, 2]}
    assert from_wire(wire) == Ping(1, 2)


@pytest.mark.parametrize(
    ("wire", "match"),
    [
        ([1, 2], "must be a map"),
        ({"seq": 1}, "unknown message type"),
        ({"type": "shell", "cmd": "rm"}, "unknown message type"),
        ({"type": "ping", "seq": 1}, "token"),
        ({"type": "ping", "seq": "1", "token": 1}, "expected int"),
        ({"type": "ping", "seq": True, "token": 1}, "expected int"),
        ({"type": "subscribe", "seq": 1, "rate_hz": "fast"}, "expected float"),
        ({"type": "link", "state": "exploded", "wall": 1.0}, "not one of"),
        (
            {"type": "event", "id": 1, "kind": "x", "severity": "dire", "detail": "", "wall": 1.0},
            "not one of",
        ),
        ({"type": "sample", "seq": 1, "wall": 1.0, "mono": 1.0, "host": []}, "expected a map"),
        (to_wire(SAMPLE) | {"gpus": [{"index": 0, "state": "ok", "values": {"x": "1"}}]}, "x"),
        (to_wire(SAMPLE) | {"gpus": {"0": 1}}, "expected a list"),
    ],
)
def test_invalid_messages_are_protocol_errors(wire, match):
    with pytest.raises(ProtocolError, match=match):
        from_wire(wire)


def test_non_string_keys_are_refused():
    wire = msgpack.unpackb(msgpack.packb(to_wire(SAMPLE)), raw=False)
    wire["host"]["values"] = {1: 2.0}
    with pytest.raises(ProtocolError):
        from_wire(wire)


def test_a_samples_wire_map_is_the_generic_one_built_faster():
    generic = {"type": "sample"} | to_plain(SAMPLE)
    assert to_wire(SAMPLE) == generic
    assert list(to_wire(SAMPLE)) == list(generic)  # the same order of keys, the same bytes
    assert msgpack.packb(to_wire(SAMPLE)) == msgpack.packb(generic)


def test_transformer_results_round_trip_and_older_results_still_decode():
    gpt = ModelResult("gpt-1.3b", "torch", "cuda", "bf16", 8, 16, image_size=0, seq_len=2048,
                      tokens_per_s=5.2e5, mfu=0.61, peak_tflops=989.0, parallel="fsdp",
                      peak_memory=90 << 30, losses=[10.9, 7.2, 3.1])  # fmt: skip
    attention = KernelResult("attention", "torch", "cuda:0", "bf16", "fwd+bwd",
                             "b4 h16 s4096 d128 causal", tflops=540.0, backend="flash")  # fmt: skip
    for result in (gpt, attention):
        message = JobResult.of("job", result)
        assert from_wire(msgpack.unpackb(msgpack.packb(to_wire(message)))) == message
    # A result from before these fields: every one of them takes its default.
    cnn = {"model": "resnet50", "framework": "torch", "device": "cuda", "precision": "bf16",
           "gpus": 1, "batch": 256, "images_per_s": 7e3}  # fmt: skip
    old = {"type": "result", "job": "j", "model": cnn}
    decoded = from_wire(old)
    assert isinstance(decoded, JobResult) and decoded.model is not None
    assert (decoded.model.tokens_per_s, decoded.model.mfu, decoded.model.losses) == (None, None, [])
    with pytest.raises(ProtocolError, match="mfu"):
        from_wire({**old, "model": {**old["model"], "mfu": "61%"}})
