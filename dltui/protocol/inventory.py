"""What an agent says about its server in its welcome: the host, its GPUs (and their MIG
instances) and how they are wired. Sent once per connection; each sample then refers to a GPU
by its index."""

from __future__ import annotations

from dataclasses import dataclass, field

from dltui.protocol.topology import Topology


@dataclass(frozen=True, slots=True)
class MigInstance:
    """One MIG instance of a GPU in MIG mode: what a benchmark can target as `cuda:<uuid>`."""

    uuid: str
    """"MIG-…", as CUDA_VISIBLE_DEVICES takes it."""
    gpu_instance: int
    compute_instance: int
    profile: str
    """The profile's name, e.g. "1g.18gb" (from NVML's name for the instance)."""
    memory_total: int
    """Bytes."""
    sm_count: int | None = None


@dataclass(frozen=True, slots=True)
class GpuInfo:
    index: int
    name: str
    uuid: str
    memory_total: int
    """Bytes."""
    pcie_gen: int | None = None
    pcie_width: int | None = None
    pcie_gen_max: int | None = None
    pcie_width_max: int | None = None
    nvlink_links: int = 0
    """Active NVLink links; 0 where there are none or NVML cannot say."""
    gpm: bool = False
    """Whether GPM metrics (SM active, tensor active, DRAM, PCIe rates) are supported."""
    mig: bool = False
    """MIG mode is on: the GPU is split into `mig_instances`."""
    mig_instances: list[MigInstance] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Inventory:
    hostname: str
    os: str
    cpu_model: str
    cpu_count: int
    memory_total: int
    gpus: list[GpuInfo] = field(default_factory=list)
    driver_version: str | None = None
    cuda_version: str | None = None
    nvml_error: str | None = None
    """Why there are no GPUs (no driver, NVML failed to start); None when NVML works."""
    frameworks: dict[str, str] = field(default_factory=dict)
    python: str = ""
    dltui: str = ""
    topology: Topology | None = None
    """How the server is wired (GPU paths, NUMA, NICs); None from agents older than it."""
