"""Whose work is on each GPU: the owner and the place of each process NVML lists.

NVML gives a PID (the host's, also for a process in a container's PID namespace) and the GPU
memory it holds. From the host's /proc this adds the user, the command line, the start time,
CPU % and RSS (psutil), the PID inside its own namespace, and where it runs, read from its
cgroup: a container (docker, containerd, cri-o, podman), a Kubernetes pod (kubepods, with the
pod and container names where the kubelet's log links in /var/log/containers say), a Slurm job
(slurm/uid_*/job_*; a SLURM_JOB_ID in its environment, which its owner can set to anything, is
only `job_claimed`). A process this agent started (its benchmark worker and the ranks below it)
is marked `own`: not someone else's work.

Read with the process lists on the sampler's slow thread, every 2 s: a few /proc files per
process. What cannot be read (another user's environment without root) stays None. Any local
user names their processes (comm, argv, environment, a delegated cgroup's folders) with any
bytes, and a process may end between two reads: text is decoded with replacement
(`foreign_text.decoded`), and a process that cannot be read costs its own details, never the
list.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from dltui.foreign_text import decoded, shown
from dltui.protocol.samples import GpuProcess

CLAIM_LIMIT = 32
"""Characters kept of a claimed job ID (Slurm's are numbers)."""
COMMAND_LIMIT = 200
"""Characters of a command line kept: enough to tell runs apart, bounded on the wire."""
PROC = Path("/proc")
POD_LOGS = Path("/var/log/containers")
_HEX64 = r"[0-9a-f]{64}"
# A systemd scope or a cgroupfs folder named for its container: runtime prefix, then the ID.
_SCOPE = re.compile(rf"^(docker|cri-containerd|crio|libpod|nerdctl)-({_HEX64})(?:\.scope)?$")
_RUNTIMES = {"docker": "docker", "cri-containerd": "containerd", "crio": "cri-o",
             "libpod": "podman", "nerdctl": "containerd"}  # fmt: skip
_BARE = re.compile(rf"^{_HEX64}$")
_BARE_PARENTS = {"docker": "docker", "libpod_parent": "podman"}
_POD = re.compile(r"pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})")
_SLURM_JOB = re.compile(r"^job_(\d+)$")
# /var/log/containers/<pod>_<namespace>_<container>-<container id>.log
_POD_LOG = re.compile(rf"^(?P<pod>[^_]+)_(?P<ns>[^_]+)_(?P<name>.+)-(?P<id>{_HEX64})\.log$")


@dataclass(frozen=True)
class Placement:
    """Where a process runs, as its cgroup says."""

    container: str | None = None
    runtime: str | None = None
    pod: str | None = None
    job: str | None = None


def placement(cgroup: str) -> Placement:
    """Read /proc/PID/cgroup's text: every hierarchy's path is looked at (under cgroup v1 a
    runtime may have moved the process in some controllers only)."""
    container = runtime = pod = job = None
    for line in cgroup.splitlines():
        path = line.split(":", 2)[-1]
        parts = [part for part in path.split("/") if part]
        for position, part in enumerate(parts):
            if scope := _SCOPE.match(part):
                runtime, container = _RUNTIMES[scope.group(1)], scope.group(2)
            elif _BARE.match(part):
                container = part
                parent = parts[position - 1] if position else ""
                runtime = runtime or _BARE_PARENTS.get(parent)
            if found := _POD.search(part):
                pod = found.group(1).replace("_", "-")
            if "slurm" in path and (slurm := _SLURM_JOB.match(part)):
                job = slurm.group(1)
    return Placement(container, runtime, pod, job)


class Owners:
    """Describes GPU processes; keeps each one's psutil handle between reads for its CPU %."""

    def __init__(self, proc: Path = PROC, pod_logs: Path = POD_LOGS) -> None:
        self._proc = proc
        self._pod_logs = pod_logs
        self._agent = os.getpid()
        self._known: dict[int, psutil.Process] = {}
        self._listed: dict[int, set[int]] = {}
        """GPU index -> the PIDs its last list held: a GPU not read this round keeps its own."""
        self._pod_names: dict[str, tuple[str, str]] = {}
        """Container ID -> (namespace/pod, container name), from the kubelet's log links."""

    def describe(self, lists: dict[int, list[GpuProcess]]) -> dict[int, list[GpuProcess]]:
        """Every list with its processes described; each PID is read once however many GPUs
        it uses (CPU % is measured between two reads). GPUs absent from `lists` were not due:
        their processes are kept for the next read."""
        pids = {process.pid for found in lists.values() for process in found}
        described = {pid: self._described(pid) for pid in pids}
        self._listed |= {index: {process.pid for process in found}
                         for index, found in lists.items()}  # fmt: skip
        for gone in self._known.keys() - set().union(*self._listed.values()):
            del self._known[gone]
        return {index: [dataclasses.replace(process, **described[process.pid])
                        for process in found]
                for index, found in lists.items()}  # fmt: skip

    def _described(self, pid: int) -> dict[str, Any]:
        """What can be said of one process; nothing (its PID and memory stay) where it went
        away or /proc said something unexpected about it."""
        try:
            return self._owner(pid)
        except (psutil.Error, OSError, ValueError) as exc:  # UnicodeError is a ValueError
            logging.getLogger(__name__).debug("process %d not described: %r", pid, exc)
            self._known.pop(pid, None)
            return {}

    def _owner(self, pid: int) -> dict[str, Any]:
        process = self._known.get(pid)
        seen = process is not None
        try:
            if process is None or not process.is_running():  # a new process, or a PID reused
                process, seen = psutil.Process(pid), False
            self._known[pid] = process
            with process.oneshot():
                cpu = process.cpu_percent(None)  # since the last read; the first starts it
                found: dict[str, Any] = {
                    "name": decoded(process.name()),
                    "started": process.create_time(),
                    "cpu": cpu if seen else None,
                    "rss": process.memory_info().rss,
                    "own": self._agent == pid or self._agent in {p.pid for p in process.parents()},
                }
                found |= _readable(process)
        except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
            self._known.pop(pid, None)
            return {}
        found |= self._where(pid, process)
        return found

    def _where(self, pid: int, process: psutil.Process) -> dict[str, Any]:
        found: dict[str, Any] = {}
        place = placement(_read(self._proc / str(pid) / "cgroup"))
        found |= {k: v for k, v in dataclasses.asdict(place).items() if v is not None}
        if place.job is None:
            claimed = _environment(process).get("SLURM_JOB_ID")
            if claimed is not None:
                found["job_claimed"] = shown(claimed, CLAIM_LIMIT)
        if place.pod is not None and place.container is not None:
            names = self._pod_name(place.container)
            if names is not None:
                found["pod_name"], found["container_name"] = names
        ns_pid = _namespace_pid(_read(self._proc / str(pid) / "status"))
        if ns_pid is not None and ns_pid != pid:
            found["ns_pid"] = ns_pid
        return found

    def _pod_name(self, container: str) -> tuple[str, str] | None:
        if container not in self._pod_names:
            try:
                names = os.listdir(self._pod_logs)
            except OSError:
                return None
            for name in names:
                if match := _POD_LOG.match(decoded(name)):
                    pod = f"{match.group('ns')}/{match.group('pod')}"
                    self._pod_names[match.group("id")] = (pod, match.group("name"))
        return self._pod_names.get(container)


def _readable(process: psutil.Process) -> dict[str, Any]:
    """User and command line, each where this agent may read it."""
    found: dict[str, Any] = {}
    try:
        found["user"] = decoded(process.username())
    except (KeyError, psutil.AccessDenied):  # a UID the host has no name for (a container's)
        found["user"] = f"uid {process.uids().real}"
    try:
        found["command"] = command_text(process.cmdline())
    except (psutil.AccessDenied, psutil.ZombieProcess):
        # Or ending: its memory is gone while its CUDA context is torn down (NVML lists it for
        # ~170 ms more). Whose it is still reads; dropping all of it made the agent's own
        # ending worker someone's "pid N", which refused the job sent the moment it ended.
        pass
    return found


def command_text(argv: list[str]) -> str | None:
    """A command line as a shell would take it, cut to COMMAND_LIMIT characters."""
    if not argv:
        return None
    text = decoded(shlex.join(argv))
    return text if len(text) <= COMMAND_LIMIT else text[: COMMAND_LIMIT - 1] + "…"


def _environment(process: psutil.Process) -> dict[str, str]:
    try:
        return process.environ()
    except (psutil.AccessDenied, psutil.NoSuchProcess, psutil.ZombieProcess, OSError):
        return {}


def _namespace_pid(status: str) -> int | None:
    """The innermost PID of /proc/PID/status's NSpid line (its PID in its own namespace)."""
    for line in status.splitlines():
        if line.startswith("NSpid:"):
            pids = line.split()[1:]
            return int(pids[-1]) if pids else None
    return None


def _read(path: Path) -> str:
    try:
        return decoded(path.read_bytes())  # a delegated cgroup's folders have the user's names
    except OSError:
        return ""
