"""One tick of telemetry as a `sample` frame carries it: each GPU's readings (its processes and
MIG instances every few ticks) and the host's."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

GpuState = Literal["ok", "lost", "error"]


@dataclass(frozen=True, slots=True)
class GpuProcess:
    """A compute process on a GPU (NVML's list), with its owner and where it runs, so a user
    sees whose work is on the GPU. Anything the agent could not read is None."""

    pid: int
    """As the agent's host sees it (a container's processes by their host PID)."""
    memory: int | None = None
    """GPU memory it holds, bytes; None where NVML cannot say (some drivers, MIG)."""
    name: str | None = None
    """The process name as the agent's host sees it; None when it could not be read."""
    user: str | None = None
    command: str | None = None
    """Its command line, shell-quoted, cut to 200 characters."""
    started: float | None = None
    """When it started, wall clock."""
    cpu: float | None = None
    """% of one core since the previous list (None in the first list it is in)."""
    rss: int | None = None
    """Host memory it holds, bytes."""
    sm_util: float | None = None
    """% of the SMs it kept busy since the previous list (nvmlDeviceGetProcessUtilization)."""
    mem_util: float | None = None
    """% of memory-controller time it used, the same way."""
    ns_pid: int | None = None
    """Its PID inside its own PID namespace, where that is not `pid` (a container's)."""
    container: str | None = None
    """Container ID, from its cgroup."""
    runtime: str | None = None
    """docker, containerd, cri-o or podman."""
    pod: str | None = None
    """Kubernetes pod UID, where its cgroup is under kubepods."""
    pod_name: str | None = None
    """Kubernetes namespace/pod, where the kubelet's log links name the container."""
    container_name: str | None = None
    """Kubernetes container name, the same way."""
    job: str | None = None
    """Slurm job ID, from its cgroup (slurm/uid_*/job_*): the kernel's word, not the user's."""
    job_claimed: str | None = None
    """The SLURM_JOB_ID in its own environment, where its cgroup names no job: anyone can
    set that, so it is shown as claimed, never as the job."""
    own: bool = False
    """This agent's own benchmark worker, or a rank that worker started."""
    gpu_instance: int | None = None
    """MIG: the GPU instance it runs in."""
    compute_instance: int | None = None


@dataclass(frozen=True, slots=True)
class MigSample:
    """One MIG instance's readings: its memory, and GPM metrics where NVML gives them."""

    gpu_instance: int
    values: dict[str, float]
    """Field name (protocol.fields) to value, as in a GPU's `values`."""


@dataclass(frozen=True, slots=True)
class GpuSample:
    index: int
    state: GpuState
    values: dict[str, float]
    """Field name (see protocol.fields) to value; a field NVML does not support is absent."""
    errors: dict[str, str] = field(default_factory=dict)
    """Fields whose read failed this tick, with NVML's reason."""
    processes: list[GpuProcess] | None = None
    """The compute processes, only in the sample after each read (every 2 s): None means
    "unchanged since the last list", an empty list "none"."""
    mig: list[MigSample] | None = None
    """A GPU in MIG mode: each instance's readings, in the sample after each read (every 2 s)
    like `processes`; None otherwise."""


@dataclass(frozen=True, slots=True)
class HostSample:
    values: dict[str, float]
    cpu_per_core: list[float] = field(default_factory=list)
