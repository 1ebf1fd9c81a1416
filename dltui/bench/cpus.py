"""How many CPUs a benchmark process may really use: its affinity, cut by its cgroup's CPU
quota (a container's limit, or a test host's) and by OMP_NUM_THREADS where a launcher set it.

Frameworks size their thread pools by the machine's cores; under a quota of fewer CPUs the
extra threads only wait for the quota's next period, and a step's time swings with them.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")


def usable_cpus() -> int:
    """At least 1."""
    limits = [len(os.sched_getaffinity(0))]
    quota = cgroup_quota()
    if quota is not None:
        limits.append(max(1, math.floor(quota)))
    threads = os.environ.get("OMP_NUM_THREADS", "")
    if threads.isdigit() and int(threads) > 0:
        limits.append(int(threads))
    return min(limits)


def cgroup_quota(
    proc_cgroup: Path = Path("/proc/self/cgroup"), root: Path = CGROUP_ROOT
) -> float | None:
    """CPUs this process's cgroup may use per period (v2 `cpu.max`, v1 `cpu.cfs_quota_us`),
    the tightest along its path; None where none is set or the files cannot be read (`ip
    netns exec` hides /sys/fs/cgroup: a launcher there sets OMP_NUM_THREADS)."""
    try:
        lines = proc_cgroup.read_text().splitlines()
    except OSError:
        return None
    found: list[float] = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":  # v2: one hierarchy
            found += _quotas(root, path, _v2)
        elif "cpu" in controllers.split(","):
            for mount in ("cpu", "cpu,cpuacct", "cpuacct,cpu"):
                if (root / mount).is_dir():
                    found += _quotas(root / mount, path, _v1)
                    break
    return min(found) if found else None


def _quotas(mount: Path, path: str, read: Callable[[Path], float | None]) -> list[float]:
    """The quota of each cgroup from `path` up to the root that has one."""
    parts = [part for part in path.split("/") if part]
    found = []
    for depth in range(len(parts), -1, -1):
        quota = read(mount.joinpath(*parts[:depth]))
        if quota is not None:
            found.append(quota)
    return found


def _v2(folder: Path) -> float | None:
    try:
        limit, period = (folder / "cpu.max").read_text().split()
    except (OSError, ValueError):
        return None
    return None if limit == "max" else int(limit) / int(period)


def _v1(folder: Path) -> float | None:
    try:
        quota = int((folder / "cpu.cfs_quota_us").read_text())
        period = int((folder / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return None if quota <= 0 else quota / period
