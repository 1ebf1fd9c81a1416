"""What an agent does under the attacks of issue #13, measured on a real agent process.

    python benchmarks/hardening.py ping-flood [--pings 3000000] [--rounds 3]
    python benchmarks/hardening.py preauth-flood [--connections 128] [--sources 16] [--tries 24]
    python benchmarks/hardening.py ... --tree DIR      # the agent from another checkout

ping-flood: a logged-in client sends pings with rising sequence numbers and never reads the
answers; the agent's RSS is sampled every 20 ms while it does and 30 s after it is gone (no
gc.collect: what a real agent would hold), for each round.

preauth-flood: `--connections` idle TCP connections, re-opened as soon as they close, from
`--sources` loopback addresses (127.0.0.2 and up: other hosts, as far as the agent can tell),
against an agent with a secret; meanwhile `dltui probe --secret-file` runs `--tries` times in a
row from 127.0.0.1 and each try's exit status and time are reported.

`--tree` runs the agent and probe from another checkout of dltui (e.g. `git archive plans-move
| tar -x -C /tmp/before`) for the figures before a fix; the hostile clients are always this
checkout's. Figures are in docs/results/hardening.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.security.hostile import IdleFlood, RssWatch, ping_flood, rss  # noqa: E402


def start_agent(tree: Path, *args: str) -> tuple[subprocess.Popen[bytes], int]:
    """`dltui agent` from `tree` on a free loopback port; the process and the port."""
    env = os.environ | {"PYTHONPATH": str(tree), "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "dltui", "agent", "--listen", "127.0.0.1:0", *args],
        stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=tree, env=env,
    )  # fmt: skip
    assert process.stderr is not None
    for raw in process.stderr:
        if b"listening on" in raw:
            port = int(raw.split(b"listening on ")[1].split(b",")[0].rsplit(b":", 1)[1])
            # Its log is read on and dropped: a full pipe would stall the agent.
            threading.Thread(target=process.stderr.read, daemon=True).start()
            return process, port
    raise SystemExit("the agent did not start")


def measure_ping_flood(tree: Path, pings: int, rounds: int, settle: float) -> dict:
    process, port = start_agent(tree)
    time.sleep(1.0)  # past its start: the baseline is an idle, serving agent
    try:
        result: dict = {"pings": pings, "baseline_mb": rss(process.pid) / 1e6, "rounds": []}
        for _ in range(rounds):
            with RssWatch(process.pid) as watch:
                flood = ping_flood(port, pings)
            time.sleep(settle)
            round_ = {
                "pings_sent": flood.sent,
                "disconnected": flood.disconnected,
                "seconds": round(flood.seconds, 2),
                "peak_mb": watch.peak / 1e6,
                f"after_{settle:g}s_mb": rss(process.pid) / 1e6,
            }
            result["rounds"].append(round_)
            print(json.dumps(round_), file=sys.stderr, flush=True)
        return result
    finally:
        process.kill()
        process.wait()


def measure_preauth_flood(tree: Path, connections: int, sources: int, tries: int) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        secret = Path(folder) / "secret"
        secret.write_text("a-benchmark-secret-of-enough-length\n")
        secret.chmod(0o600)
        process, port = start_agent(tree, "--secret-file", str(secret))
        addresses = [f"127.0.0.{2 + i}" for i in range(sources)]
        probe = [sys.executable, "-m", "dltui", "probe", f"127.0.0.1:{port}",
                 "--secret-file", str(secret)]  # fmt: skip
        env = os.environ | {"PYTHONPATH": str(tree)}
        outcomes = []
        try:
            with IdleFlood(port, connections, addresses) as flood:
                time.sleep(2.0)  # the flood holds every slot it can before the first try
                for _ in range(tries):
                    began = time.monotonic()
                    done = subprocess.run(probe, capture_output=True, text=True, env=env,
                                          cwd=tree, timeout=120)  # fmt: skip
                    took = time.monotonic() - began
                    last = (done.stderr.strip().splitlines() or [""])[-1]
                    outcomes.append({"exit": done.returncode, "seconds": round(took, 2),
                                     "said": last[:160]})  # fmt: skip
                    print(json.dumps(outcomes[-1]), file=sys.stderr, flush=True)
                opened, closed = flood.opened, flood.closed_by_agent
        finally:
            process.kill()
            process.wait()
    times = [o["seconds"] for o in outcomes if o["exit"] == 0]
    return {
        "connections": connections,
        "sources": sources,
        "tries": tries,
        "succeeded": len(times),
        "median_s": statistics.median(times) if times else None,
        "max_s": max(times) if times else None,
        "flood_connections_opened": opened,
        "flood_connections_closed_by_agent": closed,
        "outcomes": outcomes,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=["ping-flood", "preauth-flood"])
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout the agent runs")
    parser.add_argument("--pings", type=int, default=3_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--settle", type=float, default=30.0, help="s after each round")
    parser.add_argument("--connections", type=int, default=128)
    parser.add_argument("--sources", type=int, default=16)
    parser.add_argument("--tries", type=int, default=24)
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args()
    if args.what == "ping-flood":
        result = measure_ping_flood(args.tree, args.pings, args.rounds, args.settle)
    else:
        result = measure_preauth_flood(args.tree, args.connections, args.sources, args.tries)
    result |= {"tree": str(args.tree), "what": args.what}
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
