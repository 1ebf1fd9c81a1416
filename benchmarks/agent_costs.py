"""Where the agent's CPU and memory go, piece by piece, on this machine (needs a GPU and NVML).

agent_overhead.py measures the whole agent process; this breaks it down. The real Sampler runs
in this process at `--rate` with every NVML call, the host read, the ticks and the encoding of
each sample wrapped in thread CPU-time counters. `--floors` adds what no change to the agent's
Python removes: the loop thread's cost of one cross-thread wake and socket send (how the
sampler hands a sample to the event loop), NVML's resident memory and what malloc_trim gives
back, and the per-call cost of the reads a fast tick makes, spaced as the agent spaces them.

    python benchmarks/agent_costs.py [--rate 10] [--seconds 20] [--floors]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import ctypes
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dltui.protocol.framing import encode_frame  # noqa: E402
from dltui.protocol.messages import Sample, to_wire  # noqa: E402
from dltui.telemetry.host import HostSampler  # noqa: E402
from dltui.telemetry.nvml import NvmlGateway  # noqa: E402
from dltui.telemetry.processes import Owners  # noqa: E402
from dltui.telemetry.sampler import Sampler  # noqa: E402

spent: collections.Counter[str] = collections.Counter()
calls: collections.Counter[str] = collections.Counter()


def counted(label: Callable[..., str], function: Callable[..., Any]) -> Callable[..., Any]:
    def timed(*args: Any) -> Any:
        began = time.thread_time()
        try:
            return function(*args)
        finally:
            name = label(*args)
            spent[name] += time.thread_time() - began
            calls[name] += 1

    return timed


def pieces(rate: float, seconds: float) -> None:
    NvmlGateway._call = counted(lambda _, name, *__: f"nvml {name}", NvmlGateway._call)  # type: ignore[method-assign]
    for owner, method, label in [
        (HostSampler, "read", "host read"),
        (Sampler, "_tick", "fast tick, in all"),
        (Sampler, "_slow_tick", "slow tick, in all"),
        (NvmlGateway, "read_fast", "NVML fast reads, in all"),
        (Owners, "describe", "process owners"),
    ]:
        setattr(owner, method, counted(lambda *_, label=label: label, getattr(owner, method)))
    encode = counted(lambda _: "encode", lambda sample: encode_frame(to_wire(sample)))

    def on_sample(sample: Sample) -> None:
        encode(sample)

    sampler = Sampler(rate, on_sample)
    sampler.start()
    time.sleep(3.0)  # past the start: the first slow reads
    spent.clear()
    calls.clear()
    before, began = time.process_time(), time.monotonic()
    time.sleep(seconds)
    cpu, wall = time.process_time() - before, time.monotonic() - began
    sampler.stop()
    print(f"sampler at {rate:g} Hz for {wall:.1f} s, no client: {100 * cpu / wall:.3f}% of a core")
    for name, total in spent.most_common():
        print(f"  {name:45} {1e3 * total / wall:7.3f} ms/s {1e6 * total / calls[name]:9.1f} µs "
              f"a call  ×{calls[name]}")  # fmt: skip


def wake_floor(rate: float = 10.0, seconds: float = 10.0, size: int = 4300) -> None:
    """The loop thread's CPU per cross-thread wake that sends one frame, against a plain send."""
    sending, receiving = socket.socketpair()
    sending.setblocking(False)
    frame = b"x" * size
    threading.Thread(target=lambda: [receiving.recv(1 << 16) for _ in iter(int, 1)],
                     daemon=True).start()  # fmt: skip

    async def woken() -> float:
        loop, stop = asyncio.get_running_loop(), threading.Event()

        def ticker() -> None:
            due = time.monotonic()
            while not stop.is_set():
                loop.call_soon_threadsafe(sending.send, frame)
                due += 1 / rate
                stop.wait(max(0.0, due - time.monotonic()))

        began = time.thread_time()
        thread = threading.Thread(target=ticker)
        thread.start()
        await asyncio.sleep(seconds)
        used = time.thread_time() - began
        stop.set()
        thread.join()
        return used

    used = asyncio.run(woken())
    sending.setblocking(True)
    began = time.thread_time()
    for _ in range(1000):
        sending.send(frame)
    plain = (time.thread_time() - began) / 1000
    print(f"a wake of the loop from another thread, and a send: {1e6 * used / (seconds * rate):.0f}"
          f" µs of the loop's CPU ({100 * used / seconds:.3f}% of a core at {rate:g} Hz); "
          f"a plain send: {1e6 * plain:.1f} µs")  # fmt: skip


def resident_mb() -> float:
    return int(Path("/proc/self/statm").read_text().split()[1]) * 4096 / 1e6


def nvml_floors() -> None:
    import pynvml as nvml

    bare = resident_mb()
    nvml.nvmlInit()
    handle = nvml.nvmlDeviceGetHandleByIndex(0)
    nvml.nvmlDeviceGetUtilizationRates(handle)
    started = resident_mb()
    ctypes.CDLL(None).malloc_trim(0)
    print(f"RSS: {bare:.1f} MB before NVML, {started:.1f} MB once started, "
          f"{resident_mb():.1f} MB after malloc_trim")  # fmt: skip
    reads: dict[str, Callable[[], object]] = {
        "memory": lambda: nvml.nvmlDeviceGetMemoryInfo(handle),
        "memory v2": lambda: nvml.nvmlDeviceGetMemoryInfo(handle, version=nvml.nvmlMemory_v2),
        "utilization": lambda: nvml.nvmlDeviceGetUtilizationRates(handle),
        "power": lambda: nvml.nvmlDeviceGetPowerUsage(handle),
        "power as a field value": lambda: nvml.nvmlDeviceGetFieldValues(
            handle, [nvml.NVML_FI_DEV_POWER_INSTANT]
        ),
    }
    for name, read in reads.items():
        total = 0.0
        for _ in range(100):
            time.sleep(0.01)  # spaced, as the agent's ticks are: caches cold
            began = time.thread_time()
            read()
            total += time.thread_time() - began
        print(f"  {name:24} {1e4 * total:7.1f} µs a call, 10 ms apart")
    nvml.nvmlShutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=10.0)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--floors", action="store_true")
    args = parser.parse_args()
    if args.floors:
        wake_floor()
        nvml_floors()
    pieces(args.rate, args.seconds)


if __name__ == "__main__":
    main()
