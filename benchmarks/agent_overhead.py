"""What an agent costs the server it watches.

Starts a real agent process on loopback and keeps it busy the way its consumers would: a client
subscribed at `--client-rate` (default: the agent's `--rate`) that lets samples wait
`--client-batch` seconds at the agent (default: what the TUI asks, 0.5 s; 0: each sample as it
is read), and/or a scraper fetching `/metrics` every `--scrape-interval` seconds. Reports the
agent's CPU time per sample per GPU, its share of one core per GPU, and its RSS, from /proc.
With `--gemm` (needs PyTorch and a GPU) it also runs a bf16 GEMM loop with and without the
agent, alternating rounds in the same run, and reports the median slowdown.

    python benchmarks/agent_overhead.py [--seconds 30] [--rate 10] [--repeat 3] [--json OUT]
    python benchmarks/agent_overhead.py --client-batch 0         # a client served each tick
    python benchmarks/agent_overhead.py --no-client --scrape-interval 1       # a scraper only
    python benchmarks/agent_overhead.py --fake-nvml 1 --profile OUT.txt       # no GPU needed
    python benchmarks/agent_overhead.py --gemm --gemm-rounds 10               # on the device

`--fake-nvml N` gives the agent the test suite's fake NVML with N GPM-capable GPUs: what the
agent's own Python costs, on a machine without a GPU. `--profile` runs the agent under cProfile
in every thread and writes the functions by their own time.

Targets (issue #18, on the device): ≤ 0.5% of one core per GPU at 10 Hz with one client;
≤ 0.2% with a 1 Hz scraper only; RSS ≤ 60 MB; GEMM slowdown ≤ 0.2%, the median of ≥ 10
interleaved rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import http.client
import io
import json
import os
import pstats
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dltui.client.connection import handshake  # noqa: E402
from dltui.client.session import WATCH_BATCH_S  # noqa: E402
from dltui.client.target import parse_target  # noqa: E402
from dltui.client.transport import open_transport  # noqa: E402
from dltui.protocol.messages import Sample, Subscribe  # noqa: E402

FAKE_NVML = ROOT / "tests/fakes/nvml_shim"
PROMETHEUS_ACCEPT = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
                     "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")  # fmt: skip
"""What Prometheus 2 asks for when it scrapes."""


def agent_env(fake_gpus: int | None) -> dict[str, str]:
    """The agent's environment: with `fake_gpus`, the fake NVML with that many GPUs."""
    if fake_gpus is None:
        return os.environ | {"PYTHONPATH": str(ROOT)}
    spec = {"gpus": [{"gpm": True}] * fake_gpus}
    return os.environ | {"PYTHONPATH": f"{FAKE_NVML}:{ROOT}", "DLTUI_FAKE_NVML": json.dumps(spec)}


class AgentUnderTest:
    """An agent process, a client thread that keeps it streaming and a scraper thread."""

    def __init__(
        self,
        rate: float,
        client_rate: float | None,
        client_batch: float = 0.0,
        scrape_interval: float | None = None,
        fake_gpus: int | None = None,
        profile: str | None = None,
    ) -> None:
        command = [sys.executable, "-m", "dltui"]
        if profile is not None:
            command = [sys.executable, str(Path(__file__).resolve()), "--profiled-agent", profile]
        command += ["agent", "--listen", "127.0.0.1:0", "--rate", str(rate)]
        if scrape_interval is not None:
            command += ["--metrics", "127.0.0.1:0"]
        self.process = subprocess.Popen(command, stderr=subprocess.PIPE, env=agent_env(fake_gpus))
        assert self.process.stderr is not None
        self.metrics_port: int | None = None
        for raw in self.process.stderr:
            metrics = re.search(rb"metrics on http://\S+:(\d+)/metrics", raw)
            if metrics:
                self.metrics_port = int(metrics.group(1))
            match = re.search(rb"listening on \S+:(\d+), (\d+) GPU", raw)
            if match:
                self.port, self.gpus = int(match.group(1)), int(match.group(2))
                break
        else:
            raise SystemExit("the agent did not start")
        threading.Thread(target=self._drain, daemon=True).start()
        self.samples = 0
        self.scrapes = 0
        self._stop = threading.Event()
        if client_rate is not None:
            consume = lambda: asyncio.run(self._consume(client_rate, client_batch))  # noqa: E731
            threading.Thread(target=consume, daemon=True).start()
        if scrape_interval is not None:
            scrape = lambda: self._scrape(scrape_interval)  # noqa: E731
            threading.Thread(target=scrape, daemon=True).start()

    def _drain(self) -> None:
        assert self.process.stderr is not None
        for _ in self.process.stderr:
            pass

    async def _consume(self, rate: float, batch: float) -> None:
        transport = await open_transport(parse_target(f"127.0.0.1:{self.port}"))
        await handshake(transport.stream, None, "overhead-benchmark")
        await transport.stream.send(Subscribe(1, rate, batch))
        while not self._stop.is_set():
            if isinstance(await transport.stream.receive(), Sample):
                self.samples += 1
        await transport.close()

    def _scrape(self, interval: float) -> None:
        """GET /metrics every `interval` seconds as Prometheus does: on one connection kept
        open (HTTP/1.1), asking for OpenMetrics first."""
        assert self.metrics_port is not None
        connection = http.client.HTTPConnection("127.0.0.1", self.metrics_port, timeout=5)
        due = time.monotonic()
        while not self._stop.wait(max(0.0, due - time.monotonic())):
            connection.request("GET", "/metrics", headers={"Accept": PROMETHEUS_ACCEPT})
            with connection.getresponse() as answer:
                answer.read()
            self.scrapes += 1
            due += interval

    def cpu_seconds(self) -> float:
        times = psutil.Process(self.process.pid).cpu_times()
        return times.user + times.system

    def thread_seconds(self) -> dict[str, float]:
        """CPU seconds per thread, by its name in /proc (with its id: names can repeat), to the
        nanosecond from the scheduler's count (schedstat), not in the 10 ms ticks of /proc's
        stat that make a 30 s figure ±0.033%."""
        pid = self.process.pid
        seconds = {}
        for thread in psutil.Process(pid).threads():
            task = Path(f"/proc/{pid}/task/{thread.id}")
            try:
                name = (task / "comm").read_text().strip()
                spent = int((task / "schedstat").read_text().split()[0]) / 1e9
            except OSError:
                continue  # it ended
            seconds[f"{name} {thread.id}"] = spent
        return seconds

    def rss(self) -> int:
        return psutil.Process(self.process.pid).memory_info().rss

    def stop(self) -> None:
        self._stop.set()
        self.process.terminate()
        self.process.wait(30)


def measure_agent(args: argparse.Namespace, profile: str | None = None) -> dict[str, Any]:
    client_rate = None if args.no_client else (args.client_rate or args.rate)
    agent = AgentUnderTest(
        args.rate, client_rate, args.client_batch, args.scrape_interval, args.fake_nvml, profile
    )
    try:
        deadline = time.monotonic() + 30  # a profiled agent starts slowly
        warm = lambda: agent.samples >= (client_rate or 0) and agent.scrapes >= 1  # noqa: E731
        while not (warm() if args.scrape_interval else agent.samples >= (client_rate or 0)):
            if time.monotonic() > deadline:
                raise SystemExit("the agent sent nothing for 30 s")
            time.sleep(0.05)
        time.sleep(2.0)  # past the start: the first slow reads, a rate change
        if profile is not None:
            agent.process.send_signal(signal.SIGUSR1)  # profile from here on
        cpu0, samples0, t0 = agent.cpu_seconds(), agent.samples, time.monotonic()
        threads0 = agent.thread_seconds()
        time.sleep(args.seconds)
        cpu1, samples1, t1 = agent.cpu_seconds(), agent.samples, time.monotonic()
        threads1 = agent.thread_seconds()
        rss = agent.rss()
    finally:
        agent.stop()
    cpu, samples, wall = cpu1 - cpu0, samples1 - samples0, t1 - t0
    per_gpu = max(agent.gpus, 1)
    return {
        "gpus": agent.gpus,
        "rate_hz": args.rate,
        "client_rate_hz": client_rate,
        "client_batch_s": None if client_rate is None else args.client_batch,
        "scrape_interval_s": args.scrape_interval,
        "seconds": round(wall, 2),
        "samples_delivered": samples,
        "cpu_percent_of_one_core": round(100 * cpu / wall, 3),
        "cpu_percent_of_one_core_per_gpu": round(100 * cpu / wall / per_gpu, 3),
        "rss_mb": round(rss / 1e6, 1),
        "threads_percent_of_one_core": {
            name: round(100 * (spent - threads0.get(name, 0.0)) / wall, 3)
            for name, spent in threads1.items()
        },
        "threads_in_all_percent_of_one_core": round(
            100 * sum(spent - threads0.get(name, 0.0) for name, spent in threads1.items()) / wall,
            3,
        ),
    }


def measure_gemm_slowdown(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)

    def tflops_for(duration: float) -> float:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        count, wall0 = 0, time.monotonic()
        start.record()
        while time.monotonic() - wall0 < duration:
            for _ in range(20):
                torch.mm(a, b)
            count += 20
            torch.cuda.synchronize()
        end.record()
        end.synchronize()
        return 2 * n**3 * count / (start.elapsed_time(end) / 1000) / 1e12

    tflops_for(3.0)  # warm-up: clocks, cuBLAS heuristics
    seconds = args.seconds / 2
    client_rate = None if args.no_client else (args.client_rate or args.rate)
    without, with_agent = [], []
    for round_ in range(args.gemm_rounds):
        # Each round measures both ways back to back, in turn first and second, so a clock
        # that drifts over the run weighs on both sides alike; its ratio is one round's figure.
        agent_first = round_ % 2 == 1
        if not agent_first:
            without.append(tflops_for(seconds))
        agent = AgentUnderTest(
            args.rate, client_rate, args.client_batch, args.scrape_interval, args.fake_nvml
        )
        try:
            deadline = time.monotonic() + 10
            while agent.samples < 2 and client_rate and time.monotonic() < deadline:
                time.sleep(0.01)
            with_agent.append(tflops_for(seconds))
        finally:
            agent.stop()
        if agent_first:
            without.append(tflops_for(seconds))
    slowdowns = [1 - on / off for off, on in zip(without, with_agent, strict=True)]
    return {
        "gemm": f"bf16 {n}x{n}x{n}",
        "rounds": args.gemm_rounds,
        "tflops_without_agent": [round(x, 1) for x in without],
        "tflops_with_agent": [round(x, 1) for x in with_agent],
        "slowdown_percent_per_round": [round(100 * x, 3) for x in slowdowns],
        "slowdown_percent": round(100 * statistics.median(slowdowns), 3),
    }


def profiled_agent(out: str, argv: list[str]) -> None:
    """Run `dltui AGENT-ARGS` with cProfile in every thread, timing CPU time per thread; SIGUSR1
    starts the count again (after the start-up); on exit, write the functions by their own
    time (what the agent's Python spends per tick is the point)."""
    from dltui.cli import main

    profiles: list[cProfile.Profile] = []

    def start_profile(*_: object) -> None:
        profile = cProfile.Profile(time.thread_time)
        profiles.append(profile)
        profile.enable()  # replaces this hook for the rest of the thread

    # From Python 3.12 a profiler sees every thread (sys.monitoring) and only one may be active:
    # one profile, timed by process CPU time (the threads' slices interleave, and are counted
    # to whichever function is running when a slice ends).
    per_thread = sys.version_info < (3, 12)
    if per_thread:
        threading.setprofile(start_profile)
    signal.signal(signal.SIGUSR1, lambda *_: [profile.clear() for profile in profiles])
    main_profile = cProfile.Profile(time.thread_time if per_thread else time.process_time)
    profiles.append(main_profile)
    main_profile.enable()
    try:
        main(argv)
    finally:
        main_profile.disable()
        text = io.StringIO()
        for profile in profiles:
            profile.create_stats()
        measured = [profile for profile in profiles if profile.stats]  # type: ignore[attr-defined]
        stats = pstats.Stats(*measured, stream=text)  # type: ignore[arg-type]
        stats.sort_stats("tottime").print_stats(45)
        Path(out).write_text(text.getvalue())


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--profiled-agent":
        profiled_agent(sys.argv[2], sys.argv[3:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--rate", type=float, default=10.0, help="the agent's --rate")
    parser.add_argument("--client-rate", type=float, help="the client's rate (default --rate)")
    parser.add_argument("--client-batch", type=float, default=WATCH_BATCH_S, metavar="S",
                        help="how long the client lets samples wait (the TUI's)")  # fmt: skip
    parser.add_argument("--no-client", action="store_true", help="no client subscribed")
    parser.add_argument("--scrape-interval", type=float, metavar="S",
                        help="serve --metrics and scrape it every S seconds")  # fmt: skip
    parser.add_argument("--fake-nvml", type=int, metavar="GPUS",
                        help="the suite's fake NVML with GPUS GPUs (no GPU needed)")  # fmt: skip
    parser.add_argument("--repeat", type=int, default=1, help="measure this many times")
    parser.add_argument("--profile", metavar="OUT", help="profile the agent; write to OUT")
    parser.add_argument("--gemm", action="store_true", help="also measure GEMM slowdown (GPU)")
    parser.add_argument("--gemm-rounds", type=int, default=10)
    parser.add_argument("--json", metavar="OUT")
    args = parser.parse_args()

    runs = [measure_agent(args) for _ in range(args.repeat)]
    report: dict[str, Any] = {"agent": runs[0] if len(runs) == 1 else {
        **{k: v for k, v in runs[0].items() if k not in MEASURED},
        **{k: sorted(run[k] for run in runs) for k in MEASURED},
        "median_cpu_percent_of_one_core_per_gpu": statistics.median(
            run["cpu_percent_of_one_core_per_gpu"] for run in runs),
    }}  # fmt: skip
    if args.profile:
        measure_agent(args, profile=args.profile)
        report["profile"] = args.profile
    if args.gemm:
        report["gemm"] = measure_gemm_slowdown(args)
    for section, figures in report.items():
        print(f"[{section}]")
        for key, value in figures.items() if isinstance(figures, dict) else [("", figures)]:
            print(f"  {key:40} {value}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")


MEASURED = ("seconds", "samples_delivered", "cpu_percent_of_one_core",
            "cpu_percent_of_one_core_per_gpu", "threads_in_all_percent_of_one_core",
            "rss_mb")  # fmt: skip

if __name__ == "__main__":
    main()
