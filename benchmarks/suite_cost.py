"""What `make test`'s pytest costs: wall seconds and CPU seconds (the suite's processes and every
process they start), and the tests that spend the CPU.

This machine's speed drifts by a third within hours, so one run says little: with `--base REV`
the same suite of another commit (a git worktree) runs in the same session, alternating with
this tree's, and the figures are medians and their ratio.

    python benchmarks/suite_cost.py [--base REV] [--rounds 2] [--workers N] [--top 15]

Loaded by pytest as a plugin (`-p suite_cost`, with benchmarks/ on PYTHONPATH), this module
writes each worker's tests with their CPU and wall seconds; a module-scoped fixture's agent is
charged to the test after which it is reaped.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
OUT_ENV = "DLTUI_SUITE_COST_DIR"


# --- the plugin, in each pytest worker ---------------------------------------------------------

_rows: list[tuple[str, float, float]] = []


def _cpu() -> float:
    mine = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    return mine.ru_utime + mine.ru_stime + reaped.ru_utime + reaped.ru_stime


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    cpu, wall = _cpu(), time.monotonic()
    try:
        return (yield)
    finally:
        _rows.append((item.nodeid, _cpu() - cpu, time.monotonic() - wall))


def pytest_sessionfinish(session: pytest.Session) -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    Path(os.environ[OUT_ENV], f"{worker}.json").write_text(json.dumps(_rows))


# --- the benchmark -------------------------------------------------------------------------------


def run_suite(tree: Path, workers: int) -> tuple[float, float, str, list[list[Any]]]:
    """One pytest run in `tree`: wall s, CPU s, its summary line, and its tests' rows."""
    with tempfile.TemporaryDirectory() as out:
        env = os.environ | {
            OUT_ENV: out,
            "PYTHONPATH": f"{tree}{os.pathsep}{ROOT / 'benchmarks'}",
        }
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # as `make test` runs it
        command = [sys.executable, "-m", "pytest", "-q", "-n", str(workers), "--dist", "load",
                   "-p", "no:cacheprovider", "-p", "suite_cost"]  # fmt: skip
        before, began = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
        done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
        wall, after = time.monotonic() - began, resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        summary = (done.stdout.strip().splitlines() or ["(no output)"])[-1]
        if done.returncode != 0:
            raise SystemExit(f"pytest failed in {tree}: {summary}\n{done.stdout[-3000:]}")
        rows = [row for part in Path(out).glob("*.json") for row in json.loads(part.read_text())]
    return wall, cpu, summary, rows


def compile_tree(tree: Path) -> None:
    """Bytecode first, so neither side's first round pays for compiling."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", "dltui", "tests"], cwd=tree,
                   check=True, capture_output=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", help="a commit to measure against, alternating with this tree")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2 * (os.cpu_count() or 1))
    parser.add_argument("--top", type=int, default=15, help="the tests that spend the most CPU")
    args = parser.parse_args()

    trees = {"this tree": ROOT}
    scratch = tempfile.TemporaryDirectory()
    if args.base:
        base = Path(scratch.name, "base")
        subprocess.run(["git", "worktree", "add", "--detach", "-q", str(base), args.base],
                       cwd=ROOT, check=True)  # fmt: skip
        trees = {f"base {args.base}": base} | trees
    try:
        for tree in trees.values():
            compile_tree(tree)
        figures: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
        rows: list[list[Any]] = []
        for round_ in range(1, args.rounds + 1):
            for name, tree in trees.items():
                wall, cpu, summary, rows_here = run_suite(tree, args.workers)
                figures[name].append((wall, cpu))
                if tree == ROOT:
                    rows = rows_here
                print(f"round {round_}  {name:<18} wall {wall:6.1f} s  CPU {cpu:6.1f} s  "
                      f"({summary})", flush=True)  # fmt: skip
    finally:
        if args.base:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT,
                           check=False)  # fmt: skip
        scratch.cleanup()

    medians = {
        name: (statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs))
        for name, runs in figures.items()
    }
    print(f"\nmedians of {args.rounds} rounds, {args.workers} workers on {os.cpu_count()} cores")
    for name, (wall, cpu) in medians.items():
        print(f"  {name:<18} wall {wall:6.1f} s  CPU {cpu:6.1f} s")
    if args.base:
        (base_wall, base_cpu), (wall, cpu) = medians.values()
        print(f"  this tree / base   wall {wall / base_wall:.3f}  CPU {cpu / base_cpu:.3f}")
    total = sum(cpu for _, cpu, _ in rows)
    print(f"\nthis tree's last round: {total:.0f} CPU s in tests; the {args.top} costliest")
    for nodeid, cpu, wall in sorted(rows, key=lambda row: -row[1])[: args.top]:
        print(f"  {cpu:6.1f} CPU s  {wall:6.1f} s wall  {nodeid}")


if __name__ == "__main__":
    main()
