"""What an agent costs the server it watches.

Starts a real agent process on loopback with one client subscribed at the agent's rate, and
reports its CPU time per sample per GPU, its share of one core per GPU, and its RSS. With
`--gemm` (needs PyTorch and a GPU) it also runs a bf16 GEMM loop with and without the agent
sampling, alternating rounds in the same run, and reports the slowdown.

    python benchmarks/agent_overhead.py [--seconds 20] [--rate 10] [--gemm] [--json OUT]

Targets (issue #2): ≤ 0.5% of one core per GPU at 10 Hz, RSS ≤ 60 MB, GEMM slowdown ≤ 0.2%.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dltui.client.connection import handshake  # noqa: E402
from dltui.client.target import parse_target  # noqa: E402
from dltui.client.transport import open_transport  # noqa: E402
from dltui.protocol.messages import Sample, Subscribe  # noqa: E402


class AgentUnderTest:
    """An agent process and a client thread that keeps it streaming."""

    def __init__(self, rate: float) -> None:
        env = os.environ | {"PYTHONPATH": str(ROOT)}
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "dltui",
                "agent",
                "--listen",
                "127.0.0.1:0",
                "--rate",
                str(rate),
            ],
            stderr=subprocess.PIPE,
            env=env,
        )
        assert self.process.stderr is not None
        for raw in self.process.stderr:
            match = re.search(rb"listening on \S+:(\d+), (\d+) GPU", raw)
            if match:
                self.port, self.gpus = int(match.group(1)), int(match.group(2))
                break
        else:
            raise SystemExit("the agent did not start")
        threading.Thread(target=self._drain, daemon=True).start()
        self.rate = rate
        self.samples = 0
        self._stop = threading.Event()
        self._client = threading.Thread(target=lambda: asyncio.run(self._consume()), daemon=True)
        self._client.start()

    def _drain(self) -> None:
        assert self.process.stderr is not None
        for _ in self.process.stderr:
            pass

    async def _consume(self) -> None:
        transport = await open_transport(parse_target(f"127.0.0.1:{self.port}"))
        await handshake(transport.stream, None, "overhead-benchmark")
        await transport.stream.send(Subscribe(1, self.rate))
        while not self._stop.is_set():
            if isinstance(await transport.stream.receive(), Sample):
                self.samples += 1
        await transport.close()

    def cpu_seconds(self) -> float:
        times = psutil.Process(self.process.pid).cpu_times()
        return times.user + times.system

    def rss(self) -> int:
        return psutil.Process(self.process.pid).memory_info().rss

    def stop(self) -> None:
        self._stop.set()
        self.process.terminate()
        self.process.wait(10)


def measure_agent(seconds: float, rate: float) -> dict:
    agent = AgentUnderTest(rate)
    try:
        deadline = time.monotonic() + 10
        while agent.samples < rate and time.monotonic() < deadline:  # warm: a second of samples
            time.sleep(0.05)
        cpu0, samples0, t0 = agent.cpu_seconds(), agent.samples, time.monotonic()
        time.sleep(seconds)
        cpu1, samples1, t1 = agent.cpu_seconds(), agent.samples, time.monotonic()
        rss = agent.rss()
    finally:
        agent.stop()
    cpu, samples, wall = cpu1 - cpu0, samples1 - samples0, t1 - t0
    per_gpu = max(agent.gpus, 1)
    return {
        "gpus": agent.gpus,
        "rate_hz": rate,
        "seconds": round(wall, 2),
        "samples_delivered": samples,
        "delivered_rate_hz": round(samples / wall, 2),
        "cpu_percent_of_one_core": round(100 * cpu / wall, 3),
        "cpu_percent_of_one_core_per_gpu": round(100 * cpu / wall / per_gpu, 3),
        "cpu_us_per_sample_per_gpu": round(1e6 * cpu / max(samples, 1) / per_gpu, 1),
        "rss_mb": round(rss / 1e6, 1),
    }


def measure_gemm_slowdown(rounds: int, seconds: float, rate: float) -> dict:
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
    without, with_agent = [], []
    for _ in range(rounds):
        without.append(tflops_for(seconds))
        agent = AgentUnderTest(rate)
        try:
            deadline = time.monotonic() + 10
            while agent.samples < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
            with_agent.append(tflops_for(seconds))
        finally:
            agent.stop()
    off, on = statistics.median(without), statistics.median(with_agent)
    return {
        "gemm": f"bf16 {n}x{n}x{n}",
        "rounds": rounds,
        "tflops_without_agent": [round(x, 1) for x in without],
        "tflops_with_agent": [round(x, 1) for x in with_agent],
        "median_without": round(off, 1),
        "median_with": round(on, 1),
        "slowdown_percent": round(100 * (1 - on / off), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rate", type=float, default=10.0)
    parser.add_argument("--gemm", action="store_true", help="also measure GEMM slowdown (GPU)")
    parser.add_argument("--gemm-rounds", type=int, default=4)
    parser.add_argument("--json", metavar="OUT")
    args = parser.parse_args()

    report = {"agent": measure_agent(args.seconds, args.rate)}
    if args.gemm:
        report["gemm"] = measure_gemm_slowdown(args.gemm_rounds, args.seconds / 2, args.rate)
    for section, figures in report.items():
        print(f"[{section}]")
        for key, value in figures.items():
            print(f"  {key:34} {value}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
