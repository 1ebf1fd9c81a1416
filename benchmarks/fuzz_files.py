"""Fuzz every file parser for longer than the suite does (tests/fuzz/file_targets.py).

    python benchmarks/fuzz_files.py [--seconds 60] [--target NAME ...]

Each target runs hypothesis in rounds of `--batch` examples, each round from a fresh random
seed, until its share of the time is spent; a finding stops it and prints the input. The
suite runs the same targets for about a second each (tests/fuzz/test_file_parsers.py).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hypothesis import HealthCheck, given, settings  # noqa: E402

from tests.fuzz.file_targets import TARGETS  # noqa: E402


def fuzz(name: str, seconds: float, batch: int) -> tuple[int, str | None]:
    """Examples run, and the finding (None if there was none)."""
    target, strategies = TARGETS[name]
    run = settings(
        max_examples=batch, deadline=None, database=None, print_blob=True,
        suppress_health_check=list(HealthCheck),
    )(given(**strategies)(target))  # fmt: skip
    examples = 0
    stop = time.monotonic() + seconds
    while time.monotonic() < stop:
        try:
            run()
        except Exception as exc:  # a finding: hypothesis has shrunk it and says what it was
            return examples, f"{type(exc).__name__}: {exc}"
        examples += batch
    return examples, None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="per target")
    parser.add_argument("--batch", type=int, default=500, help="examples per round")
    parser.add_argument("--target", action="append", choices=sorted(TARGETS))
    args = parser.parse_args()
    found = False
    for name in args.target or sorted(TARGETS):
        began = time.monotonic()
        examples, finding = fuzz(name, args.seconds, args.batch)
        took = time.monotonic() - began
        print(f"{name:<18} {examples:>9,} examples in {took:6.1f} s  "
              f"{'FINDING: ' + finding if finding else 'nothing found'}", flush=True)  # fmt: skip
        found = found or finding is not None
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
