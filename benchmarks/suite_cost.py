"""What `make test`'s pytest costs: wall seconds and CPU seconds (the suite's processes and every
process they start), and the tests that spend the CPU.

This machine's speed drifts by a third within hours, so one run says little: with `--base REV`
the same suite of another commit (a git worktree) runs in the same session, alternating with
this tree's, and the figures are medians and their ratio.

The CPU of the suite's processes misses what they do not reap: agents started in their own
sessions (the network-namespace hosts' among them). The machine's busy time (/proc/stat) has
it all, and says whether the cores were the limit: a suite that keeps them busy cannot take
less wall time than its busy core-seconds over the cores.

    python benchmarks/suite_cost.py [--base REV] [--rounds 2] [--workers N] [--top 15]
        [--by-process]

`--by-process` adds what every Python process the suite started spent, by kind (a rank
process of each framework, an agent, a pytest worker…): benchmarks/process_cost/ is put on
their PYTHONPATH, and its sitecustomize counts each one.

Loaded by pytest as a plugin (`-p suite_cost`, with benchmarks/ on PYTHONPATH), this module
writes each worker's tests with their CPU and wall seconds, and how much of that CPU is the
worker's own (Textual, parsers, in-process kernels) rather than the processes it started; a
module-scoped fixture's agent is charged to the test after which it is reaped. With
`--workers 1` a test's cost is the machine's busy time while it ran, which counts every
process it started, reaped or not.
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
OUT_ENV = "DLTUI_SUITE_COST_DIR"
PROCESS_ENV = "DLTUI_PROCESS_COST"
"""Where benchmarks/process_cost/sitecustomize.py writes each process's line."""
MACHINE_ENV = "DLTUI_SUITE_COST_MACHINE"
"""Set: a test's cost is the machine's busy time while it ran (one worker only)."""


# --- the plugin, in each pytest worker ---------------------------------------------------------

_rows: list[tuple[str, float, float, float]] = []
"""Each test: its node id, its cost, its wall seconds, and the worker's own CPU seconds in it."""


def _cpu() -> tuple[float, float]:
    """The cost so far (the worker's CPU and its reaped children's, or the machine's busy time
    with one worker) and the worker's own CPU alone."""
    mine = resource.getrusage(resource.RUSAGE_SELF)
    own = mine.ru_utime + mine.ru_stime
    if os.environ.get(MACHINE_ENV):
        return machine_busy(), own
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own + reaped.ru_utime + reaped.ru_stime, own


def machine_busy() -> float:
    """Core-seconds this machine has spent not idle since boot (user, nice, system, irq and
    softirq: /proc/stat's first line)."""
    with open("/proc/stat") as stat:
        ticks = [int(field) for field in stat.readline().split()[1:]]
    return (ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6]) / os.sysconf("SC_CLK_TCK")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    (cost, own), wall = _cpu(), time.monotonic()
    try:
        return (yield)
    finally:
        cost_after, own_after = _cpu()
        _rows.append((item.nodeid, cost_after - cost, time.monotonic() - wall, own_after - own))


def pytest_sessionfinish(session: pytest.Session) -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    Path(os.environ[OUT_ENV], f"{worker}.json").write_text(json.dumps(_rows))


# --- the benchmark -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    wall: float
    cpu: float
    """The suite's processes and those they reaped."""
    busy: float
    """The machine's busy core-seconds meanwhile."""
    summary: str
    rows: list[list[Any]]
    processes: dict[str, tuple[int, int, float]]
    """By kind of process: started, ended (counted), and the ended ones' CPU seconds."""


def process_kind(tree: Path, argv: list[str], frameworks: list[str]) -> str:
    """A process as its command line names it (the interpreter's arguments): `dltui agent`,
    `dltui.bench.training.rank`, `-c` (the pytest workers among them), with the frameworks
    it had loaded when it ended."""
    words, skip = [], False
    for word in argv:  # the interpreter's options (-u, -X importtime) name nothing
        if not skip and (not word.startswith("-") or word in ("-m", "-c")):
            words.append(word)
        skip = word in ("-X", "-W")
    name = words[0] if words else "?"
    if name == "-m" and len(words) > 1:
        name = words[1] + (f" {words[2]}" if words[1] == "dltui" and len(words) > 2 else "")
    elif name.endswith(".py") and Path(name).resolve().is_relative_to(tree):
        name = ".".join(Path(name).resolve().relative_to(tree).with_suffix("").parts)
    return name + (f" ({', '.join(frameworks)})" if frameworks else "")


def by_process(tree: Path, log: Path) -> dict[str, tuple[int, int, float]]:
    last: dict[int, dict[str, Any]] = {}  # each process's end, or its start if it never ended
    for line in log.read_text().splitlines() if log.exists() else []:
        record = json.loads(line)
        last[record["pid"]] = record
    found: dict[str, tuple[int, int, float]] = {}
    for record in last.values():
        kind = process_kind(tree, record["argv"], record["frameworks"])
        started, ended, cpu = found.get(kind, (0, 0, 0.0))
        counted = record["ended"]
        found[kind] = (started + 1, ended + counted, cpu + (record["cpu"] if counted else 0.0))
    return found


def run_suite(tree: Path, workers: int, count_processes: bool = False) -> Run:
    """One pytest run in `tree`, as `make test` runs it (with -n 1: no xdist at all)."""
    with tempfile.TemporaryDirectory() as out:
        paths = [ROOT / "benchmarks" / "process_cost"] if count_processes else []
        env = os.environ | {
            OUT_ENV: out,
            PROCESS_ENV: str(Path(out, "processes.jsonl")),
            "PYTHONPATH": os.pathsep.join(map(str, [*paths, tree, ROOT / "benchmarks"])),
        }
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # as `make test` runs it
        parallel = ["-n", str(workers), "--dist", "loadgroup"] if workers > 1 else []
        if not parallel:
            env[MACHINE_ENV] = "1"
        command = [sys.executable, "-m", "pytest", "-q", *parallel, "-p", "no:cacheprovider",
                   "-p", "suite_cost"]  # fmt: skip
        before, busy_before = resource.getrusage(resource.RUSAGE_CHILDREN), machine_busy()
        began = time.monotonic()
        done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
        wall, after = time.monotonic() - began, resource.getrusage(resource.RUSAGE_CHILDREN)
        busy = machine_busy() - busy_before
        cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        summary = (done.stdout.strip().splitlines() or ["(no output)"])[-1]
        if done.returncode != 0:  # its figures still count; what failed is said
            failed = [line for line in done.stdout.splitlines() if line.startswith("FAILED")]
            print(f"pytest failed in {tree}:", *failed, sep="\n  ", file=sys.stderr)
        rows = [row for part in Path(out).glob("*.json") for row in json.loads(part.read_text())]
        processes = by_process(tree, Path(env[PROCESS_ENV]))
    return Run(wall, cpu, busy, summary, rows, processes)


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
    parser.add_argument("--by-process", action="store_true",
                        help="also what each kind of Python process spent")  # fmt: skip
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
        figures: dict[str, list[Run]] = {name: [] for name in trees}
        cores = os.cpu_count() or 1
        for round_ in range(1, args.rounds + 1):
            for name, tree in trees.items():
                run = run_suite(tree, args.workers, args.by_process)
                figures[name].append(run)
                print(f"round {round_}  {name:<18} wall {run.wall:6.1f} s  CPU {run.cpu:6.1f} s  "
                      f"machine busy {run.busy:6.1f} s ({run.busy / (cores * run.wall):.0%} of "
                      f"{cores} cores)  ({run.summary})", flush=True)  # fmt: skip
    finally:
        if args.base:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT,
                           check=False)  # fmt: skip
        scratch.cleanup()

    medians = {
        name: tuple(statistics.median(getattr(run, what) for run in runs)
                    for what in ("wall", "cpu", "busy"))
        for name, runs in figures.items()
    }  # fmt: skip
    print(f"\nmedians of {args.rounds} rounds, {args.workers} workers on {cores} cores")
    for name, (wall, cpu, busy) in medians.items():
        print(f"  {name:<18} wall {wall:6.1f} s  CPU {cpu:6.1f} s  machine busy {busy:6.1f} s")
    if args.base:
        (base_wall, base_cpu, base_busy), (wall, cpu, busy) = medians.values()
        print(f"  this tree / base   wall {wall / base_wall:.3f}  CPU {cpu / base_cpu:.3f}  "
              f"machine busy {busy / base_busy:.3f}")  # fmt: skip
    rows = figures["this tree"][-1].rows
    total, in_workers = sum(row[1] for row in rows), sum(row[3] for row in rows)
    measure = "machine busy" if args.workers == 1 else "CPU"
    print(f"\nthis tree's last round: {total:.0f} {measure} s in tests, {in_workers:.0f} of them "
          "the pytest workers' own; by folder, the workers' own CPU s and the rest:")  # fmt: skip
    folders: dict[str, tuple[float, float, int]] = {}
    for nodeid, cost, _, in_worker in rows:
        folder = str(Path(nodeid.split("::")[0]).parent)
        worker_s, rest_s, tests = folders.get(folder, (0.0, 0.0, 0))
        folders[folder] = (worker_s + in_worker, rest_s + cost - in_worker, tests + 1)
    costliest_first = sorted(folders.items(), key=lambda kv: -kv[1][0] - kv[1][1])
    for folder, (worker_s, rest_s, tests) in costliest_first:
        print(f"  {worker_s:7.1f} own  {rest_s:7.1f} rest  {tests:5d} tests  {folder}")
    print(f"the {args.top} costliest tests")
    for nodeid, cost, wall, _ in sorted(rows, key=lambda row: -row[1])[: args.top]:
        print(f"  {cost:6.1f} {measure} s  {wall:6.1f} s wall  {nodeid}")
    processes = figures["this tree"][-1].processes
    if processes:
        print("\nthis tree's last round by process: CPU s of those that ended where counted "
              "(a process killed by a signal is only started)")  # fmt: skip
        for kind, (started, ended, cpu) in sorted(processes.items(), key=lambda kv: -kv[1][2]):
            print(f"  {cpu:7.1f} CPU s  {ended:4d} ended of {started:4d} started  {kind}")


if __name__ == "__main__":
    main()
