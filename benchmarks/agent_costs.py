"""Where the agent's CPU and memory go, piece by piece, on this machine (needs a GPU and NVML).

agent_overhead.py measures the whole agent process; this breaks it down. The real Sampler runs
in this process at `--rate` with every NVML call, the host read, the ticks and the encoding of
each sample wrapped in thread CPU-time counters. `--floors` adds what no change to the agent's
Python removes: the loop thread's cost of one cross-thread wake and socket send (how the
sampler hands a sample to the event loop) beside a send alone to a client that sleeps between
samples (the part of it no thread avoids), NVML's resident memory and what malloc_trim gives
back, and the per-call cost of the reads a fast tick makes, spaced as the agent spaces them.
`--least` measures the least any agent can spend on this machine to read what dltui reads, as
often: one thread, no event loop, bare pynvml calls, a frame sent or a scrape answered. Last,
what prometheus-client takes to write one scrape of the latest sample.

    python benchmarks/agent_costs.py [--rate 10] [--seconds 20] [--floors] [--least]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import ctypes
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dltui.client.session import WATCH_BATCH_S  # noqa: E402
from dltui.protocol.framing import encode_frame  # noqa: E402
from dltui.protocol.inventory import Inventory  # noqa: E402
from dltui.protocol.messages import Sample  # noqa: E402
from dltui.protocol.wire import to_wire  # noqa: E402
from dltui.telemetry.host import HostSampler  # noqa: E402
from dltui.telemetry.nvml import NvmlGateway  # noqa: E402
from dltui.telemetry.nvml_reads import FAST_INTERVALS, SLOW_INTERVALS  # noqa: E402
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
    NvmlGateway._invoke = counted(lambda _, name, *__: f"nvml {name}", NvmlGateway._invoke)  # type: ignore[method-assign]
    for owner, method, label in [
        (HostSampler, "read", "host read"),
        (Sampler, "_tick", "fast tick, in all"),
        (Sampler, "_slow_tick", "slow tick, in all"),
        (NvmlGateway, "read_fast", "NVML fast reads, in all"),
        (Owners, "describe", "process owners"),
    ]:
        setattr(owner, method, counted(lambda *_, label=label: label, getattr(owner, method)))
    encode = counted(lambda _: "encode", lambda sample: encode_frame(to_wire(sample)))

    latest: list[Sample] = []

    def on_sample(sample: Sample) -> None:
        encode(sample)
        latest[:] = [sample]

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
    exposition(sampler.inventory, latest[0])


def exposition(inventory: Inventory, sample: Sample, repeat: int = 300, paced: int = 10) -> None:
    """Thread CPU of what a scrape of this sample makes: prometheus-client's metric families,
    then its OpenMetrics text, as Prometheus 2 asks for it; back to back, and `paced` times a
    second apart, as a scraper once a second finds the code (cold caches cost more in a VM)."""
    from dltui.agent.metrics import families
    from dltui.agent.metrics_server import encoder_for
    from dltui.protocol.metric_names import gpu_labels, sample_points

    labels = {gpu.index: gpu_labels(inventory.hostname, gpu.index, gpu) for gpu in inventory.gpus}
    build = lambda: families(sample_points(sample, inventory.hostname, labels))  # noqa: E731
    built = build()

    class Built:
        def collect(self) -> list[Any]:
            return built

    class Fresh:  # as a scrape does: the families built, then written
        def collect(self) -> list[Any]:
            return build()

    write, _ = encoder_for("application/openmetrics-text;version=1.0.0,text/plain;q=0.5")
    series = sum(len(family.samples) for family in built)
    for name, step in (("metric families", build), ("OpenMetrics text", lambda: write(Built()))):
        began = time.thread_time()
        for _ in range(repeat):
            step()
        each = 1e6 * (time.thread_time() - began) / repeat
        print(f"  a scrape's {name}, {series} series: {each:.0f} µs (back to back)")
    spent = 0.0
    for _ in range(paced):
        time.sleep(1.0)
        began = time.thread_time()
        write(Fresh())
        spent += time.thread_time() - began
    print(f"  both, a second apart: {1e6 * spent / paced:.0f} µs a scrape")


def wake_floor(rate: float = 10.0, seconds: float = 10.0, size: int = 4300) -> None:
    """The loop thread's CPU per cross-thread wake that sends one frame, against a plain send."""
    sending, receiving = socket.socketpair()
    sending.setblocking(False)
    frame = b"x" * size

    def drain() -> None:  # until the sender closes: then recv says b"" at once, forever
        while receiving.recv(1 << 16):
            pass

    threading.Thread(target=drain, daemon=True).start()

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
    sending.close()  # the reader's thread ends
    print(f"a wake of the loop from another thread, and a send: {1e6 * used / (seconds * rate):.0f}"
          f" µs of the loop's CPU ({100 * used / seconds:.3f}% of a core at {rate:g} Hz); "
          f"a plain send, back to back: {1e6 * plain:.1f} µs")  # fmt: skip
    print(
        f"a send at {rate:g} Hz, no loop, to a reader that sleeps in between: "
        f"{1e6 * paced_send(frame, rate, seconds):.0f} µs"
    )


def paced_send(frame: bytes, rate: float, seconds: float) -> float:
    """The sender's CPU per send when each one wakes its reader (another process), as a
    client waiting for the next sample is woken: what a sample's send costs from any thread."""
    listener = socket.create_server(("127.0.0.1", 0))
    reader = reading_peer(listener.getsockname()[1])
    client, _ = listener.accept()
    spent, count, due = 0.0, 0, time.monotonic()
    end = due + seconds
    while due < end:
        began = time.thread_time()
        client.send(frame)
        spent += time.thread_time() - began
        count += 1
        due += 1 / rate
        time.sleep(max(0.0, due - time.monotonic()))
    reader.kill()
    return spent / count


def reading_peer(port: int) -> subprocess.Popen[bytes]:
    """Another process that connects to `port` and reads whatever comes, sleeping in between."""
    reader = "import socket, sys\ns = socket.create_connection(('127.0.0.1', int(sys.argv[1])))\n"
    return subprocess.Popen([sys.executable, "-c", reader + "while s.recv(65536): pass", str(port)])


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


def least_agent(rate: float, seconds: float, scraped: bool, batch: float = 0.0) -> float:
    """% of a core for one thread that does only what the agent must, at the agent's cadences: the
    six fast reads of GPU 0 (memory, utilization, power, temperature, throttle, SM clock), each
    tick or at its own interval (FAST_INTERVALS); a GPM sample at its interval (or each tick,
    if rarer) and the energy counter at its interval (SLOW_INTERVALS); then either the values
    packed and sent to a client (another process; with `batch`, the packed ticks of `batch`
    seconds sent together) or, `scraped`, a GET from another process answered once a second
    with a fixed body, on one connection kept open as Prometheus keeps it. Nothing else: no
    other thread, no loop, no checks."""
    import msgpack
    import pynvml as nvml

    nvml.nvmlInit()
    gpu = nvml.nvmlDeviceGetHandleByIndex(0)
    gpm = nvml.nvmlGpmSampleAlloc()
    reads: list[tuple[Callable[[], object], float]] = [
        (lambda: nvml.nvmlDeviceGetMemoryInfo(gpu).used, FAST_INTERVALS.get("memory", 0.0)),
        (lambda: nvml.nvmlDeviceGetUtilizationRates(gpu).gpu, FAST_INTERVALS.get("util", 0.0)),
        (lambda: nvml.nvmlDeviceGetPowerUsage(gpu), 0.0),
        (lambda: nvml.nvmlDeviceGetTemperature(gpu, nvml.NVML_TEMPERATURE_GPU), 0.0),
        (lambda: nvml.nvmlDeviceGetCurrentClocksEventReasons(gpu), 0.0),
        (lambda: nvml.nvmlDeviceGetClockInfo(gpu, nvml.NVML_CLOCK_SM), 0.0),
    ]
    read_at = [0.0] * len(reads)
    held: list[object] = [None] * len(reads)
    listener = socket.create_server(("127.0.0.1", 0))
    if scraped:  # as Prometheus does: one connection, kept open from one GET to the next
        peer = subprocess.Popen([sys.executable, "-c", "import http.client, sys, time\n"
                                 "c = http.client.HTTPConnection('127.0.0.1', int(sys.argv[1]))\n"
                                 "while True:\n c.request('GET', '/metrics')\n"
                                 " c.getresponse().read()\n time.sleep(1)",
                                 str(listener.getsockname()[1])])  # fmt: skip
        text = b"x 1\n" * 2500
        body = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(text), text)
    else:
        peer = reading_peer(listener.getsockname()[1])
    client, _ = listener.accept()
    # The agent's slow thread wakes no faster than it samples.
    gpm_interval = max(SLOW_INTERVALS["gpm"], 1 / rate)
    began = time.monotonic()
    due, energy_due, gpm_due = began, began, began
    cpu0, end = time.process_time(), began + seconds
    unsent: list[bytes] = []
    while due < end:
        now = time.monotonic()
        for position, (read, interval) in enumerate(reads):
            if now - read_at[position] >= 0.95 * interval:  # the gateway's slack
                held[position], read_at[position] = read(), now
        values = list(held)
        if now >= gpm_due:
            nvml.nvmlGpmSampleGet(gpu, gpm)
            gpm_due += gpm_interval
        if now >= energy_due:
            values.append(nvml.nvmlDeviceGetTotalEnergyConsumption(gpu))
            energy_due += SLOW_INTERVALS["energy"]
        if not scraped:
            unsent.append(msgpack.packb([time.time(), now, values]))
            if len(unsent) >= max(1, round(batch * rate)):
                client.send(b"".join(unsent))
                unsent.clear()
        due += 1 / rate
        while (wait := due - time.monotonic()) > 0:
            if not scraped:
                time.sleep(wait)
            elif select.select([client], [], [], wait)[0]:
                client.recv(4096)
                client.sendall(body)
    used = time.process_time() - cpu0
    peer.kill()
    nvml.nvmlGpmSampleFree(gpm)
    nvml.nvmlShutdown()
    return 100 * used / (time.monotonic() - began)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=10.0)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--floors", action="store_true")
    parser.add_argument("--least", action="store_true", help="the least agent only")
    args = parser.parse_args()
    if args.least:
        for rate, scraped, batch, consumer in (
            (10.0, False, 0.0, "a frame sent each tick"),
            (10.0, False, WATCH_BATCH_S, f"frames sent every {WATCH_BATCH_S:g} s, as the TUI asks"),
            (1.0, True, 0.0, "a GET answered each second"),
        ):
            share = least_agent(rate, args.seconds, scraped, batch)
            print(f"the least agent at {rate:g} Hz, {consumer}: {share:.3f}% of a core")
        return
    if args.floors:
        wake_floor()
        nvml_floors()
    pieces(args.rate, args.seconds)


if __name__ == "__main__":
    main()
