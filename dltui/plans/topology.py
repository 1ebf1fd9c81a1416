"""The words and rates for a server's wiring, shared by the report, the TUI, the CLI and the
benchmarks: what joins two GPUs (NVLink, an NVSwitch, PCIe through a switch, a host bridge or
across sockets), how close that is, and what it carries at most.

The kinds follow `nvidia-smi topo -m`'s columns (NV#, PIX, PXB, PHB, NODE, SYS) so a reader
who knows that table reads this one. Nominal rates are per direction, from the link's
generation and width (PCIe) or version and link count (NVLink): a copy's measured GB/s is set
against them.
"""

from __future__ import annotations

from dataclasses import dataclass

from dltui.protocol.bench_results import KernelResult
from dltui.protocol.inventory import GpuInfo
from dltui.protocol.topology import GpuPair, Nic, Topology

PCIE_LANE_GBPS = {1: 0.25, 2: 0.5, 3: 8 * 128 / 130 / 8, 4: 16 * 128 / 130 / 8,
                  5: 32 * 128 / 130 / 8, 6: 64 * 242 / 256 / 8}  # fmt: skip
"""GB/s per lane and direction after line coding (8b/10b to gen 2, 128b/130b from gen 3, FLIT
from gen 6): gen5 x16 is 63 GB/s each way."""
NVLINK_VERSIONS = {1: "1.0", 2: "2.0", 3: "2.2", 4: "3.0", 5: "3.1", 6: "4.0", 7: "5.0", 8: "6.0"}
"""NVML's nvmlNvlinkVersion_t codes, as nvmlDeviceGetNvLinkVersion answers."""
NVLINK_LINK_GBPS = {1: 20.0, 2: 25.0, 3: 25.0, 4: 25.0, 5: 25.0, 6: 25.0, 7: 50.0}
"""GB/s per link and direction, by NVML's version code: P100 20; V100, A100, H100/H200 25
(18 links: 450 GB/s each way); B200 50. NVLink 6's is not published per link yet."""

PATHS = {
    "internal": "BRD",
    "single": "PIX",
    "multiple": "PXB",
    "hostbridge": "PHB",
    "node": "NODE",
    "system": "SYS",
}
"""NVML's path level -> nvidia-smi's code for it."""
KINDS = ("nvlink", "nvswitch", *PATHS, "unknown")
"""Every kind of link, closest first: the order placement ranks GPU sets by."""
KIND_WORDS = {
    "nvlink": "NVLink, GPU to GPU",
    "nvswitch": "NVLink through NVSwitches",
    "internal": "on one board",
    "single": "PCIe through one switch",
    "multiple": "PCIe through several switches",
    "hostbridge": "PCIe through a CPU's host bridge",
    "node": "PCIe across host bridges of one NUMA node",
    "system": "PCIe across CPU sockets",
    "unknown": "not reported by NVML",
}


@dataclass(frozen=True, slots=True)
class Link:
    """What joins GPUs `a` and `b`."""

    a: int
    b: int
    kind: str
    """One of KINDS."""
    links: int = 0
    """NVLink links carrying it (per GPU, through NVSwitches)."""
    nominal_gbps: float | None = None
    """Each way, GB/s; None where the version or PCIe link is unknown."""
    p2p: str = ""
    """NVML's P2P answers in words ("P2P read, write, atomics"); empty where it gave none."""

    @property
    def short(self) -> str:
        """nvidia-smi's code: "NV18", "PIX", "SYS", or "?"."""
        if self.kind in ("nvlink", "nvswitch"):
            return f"NV{self.links or '?'}"
        return PATHS.get(self.kind, "?")

    @property
    def label(self) -> str:
        """The link in a pair's line: "NVLink ×18", "NVLink ×18 (NVSwitch)", "SYS"."""
        if self.kind == "nvlink":
            return f"NVLink ×{self.links}" if self.links else "NVLink (links not read)"
        if self.kind == "nvswitch":
            return f"NVLink ×{self.links} (NVSwitch)"
        return self.short

    @property
    def words(self) -> str:
        """ "NVLink ×18 (NVSwitch)", "PIX: PCIe through one switch"."""
        if self.kind in ("nvlink", "nvswitch"):
            return self.label
        return f"{self.short}: {KIND_WORDS[self.kind]}"

    @property
    def distance(self) -> int:
        return KINDS.index(self.kind)


def pcie_gbps(gpu: GpuInfo) -> float | None:
    """What the GPU's PCIe link carries each way: at the highest generation it and its slot
    allow (an idle GPU trains its link down to a lower one and back up under load), and the
    width it trained at (a narrower link is a fault: a bad riser, a slot wired x8)."""
    gen = gpu.pcie_gen_max or gpu.pcie_gen
    width = gpu.pcie_width or gpu.pcie_width_max
    if not gen or not width or gen not in PCIE_LANE_GBPS:
        return None
    return PCIE_LANE_GBPS[gen] * width


def pcie_text(gpu: GpuInfo) -> str:
    """ "gen5 x16", with what it could be where it trained below: "gen5 x8 (of x16)"."""
    if gpu.pcie_gen is None or gpu.pcie_width is None:
        return "PCIe ?"
    text = f"gen{gpu.pcie_gen} x{gpu.pcie_width}"
    below = pcie_below_max(gpu)
    return f"{text} ({below})" if below else text


def pcie_below_max(gpu: GpuInfo) -> str | None:
    """How the link trained below what the GPU and slot allow, or None. A narrower link is a
    fault (a bad riser, a slot wired x8); a lower generation may be an idle GPU saving power."""
    below = []
    if gpu.pcie_width and gpu.pcie_width_max and gpu.pcie_width < gpu.pcie_width_max:
        below.append(f"of x{gpu.pcie_width_max}")
    if gpu.pcie_gen and gpu.pcie_gen_max and gpu.pcie_gen < gpu.pcie_gen_max:
        below.append(f"of gen{gpu.pcie_gen_max}, idle?")
    return ", ".join(below) or None


def _pair(topology: Topology, a: int, b: int) -> GpuPair | None:
    low, high = min(a, b), max(a, b)
    return next((p for p in topology.pairs if (p.a, p.b) == (low, high)), None)


def p2p_text(pair: GpuPair) -> str:
    """NVML's P2P answers both ways in words: "P2P read, write, atomics", "no P2P: chipset
    not supported", or "" where NVML gave none."""
    if not pair.p2p and not pair.p2p_back:
        return ""
    both = [cap for cap in ("read", "write", "atomics")
            if pair.p2p.get(cap) == "ok" and pair.p2p_back.get(cap) == "ok"]  # fmt: skip
    if both:
        return "P2P " + ", ".join(both)
    refusal = pair.p2p.get("read") or pair.p2p_back.get("read") or "not answered"
    return f"no P2P: {refusal}"


def link(topology: Topology, gpus: list[GpuInfo], a: int, b: int) -> Link:
    """What joins GPUs `a` and `b` (NVML indices), from what the agent read."""
    pair = _pair(topology, a, b)
    p2p = p2p_text(pair) if pair is not None else ""
    places = {place.index: place for place in topology.gpus}
    first, second = places.get(a), places.get(b)
    version = first.nvlink_version if first is not None else None
    per_link = NVLINK_LINK_GBPS.get(version) if version is not None else None
    if pair is not None and pair.nvlinks:
        nominal = per_link * pair.nvlinks if per_link else None
        return Link(a, b, "nvlink", pair.nvlinks, nominal, p2p)
    if first is not None and second is not None and first.nvswitch_links and second.nvswitch_links:
        count = min(first.nvswitch_links, second.nvswitch_links)
        return Link(a, b, "nvswitch", count, per_link * count if per_link else None, p2p)
    if pair is not None and pair.p2p.get("nvlink") == "ok":
        # NVML says P2P runs over NVLink, but where its links lead was not read (a driver
        # without the remote-end queries): NVLink, links unknown.
        return Link(a, b, "nvlink", 0, None, p2p)
    kind = pair.path if pair is not None and pair.path in PATHS else "unknown"
    rates = [rate for gpu in gpus if gpu.index in (a, b) and (rate := pcie_gbps(gpu))]
    nominal = min(rates) if len(rates) == 2 and kind != "unknown" else None
    return Link(a, b, kind, 0, nominal, p2p)


def matrix(topology: Topology, gpus: list[GpuInfo]) -> list[list[Link | None]]:
    """Row a, column b: the link between GPUs a and b (None on the diagonal)."""
    indices = [gpu.index for gpu in gpus]
    return [[None if a == b else link(topology, gpus, a, b) for b in indices] for a in indices]


def link_groups(topology: Topology, gpus: list[GpuInfo]) -> list[list[Link]]:
    """The pairs grouped by what joins them (kind, links, rate, P2P), closest first: a summary
    that stays short on a box of many alike pairs."""
    groups: dict[tuple[str, int, float | None, str], list[Link]] = {}
    indices = [gpu.index for gpu in gpus]
    for position, a in enumerate(indices):
        for b in indices[position + 1 :]:
            found = link(topology, gpus, a, b)
            key = (found.kind, found.links, found.nominal_gbps, found.p2p)
            groups.setdefault(key, []).append(found)
    return sorted(groups.values(), key=lambda links: (links[0].distance, -links[0].links))


def nvlink_text(topology: Topology, index: int) -> str | None:
    """A GPU's NVLink in words: "NVLink 4.0, 18 links to NVSwitches"; None without NVLink."""
    place = next((p for p in topology.gpus if p.index == index), None)
    if place is None or place.nvlink_version is None:
        return None
    version = NVLINK_VERSIONS.get(place.nvlink_version, f"code {place.nvlink_version}")
    switches = f", {place.nvswitch_links} to NVSwitches" if place.nvswitch_links else ""
    return f"NVLink {version}{switches}"


def nic_text(nic: Nic) -> str:
    """ "ib0 400 Gb/s · RDMA mlx5_0 InfiniBand (4X NDR) · NUMA 1"."""
    words = [nic.name]
    if nic.speed_mbps is not None:
        speed = nic.speed_mbps / 1000
        words.append(f"{speed:g} Gb/s" if speed >= 1 else f"{nic.speed_mbps} Mb/s")
    elif nic.state is not None and nic.state != "up":
        words.append(nic.state)
    if nic.rdma_device is not None:
        rdma = f"RDMA {nic.rdma_device}"
        if nic.rdma_link_layer:
            rdma += f" {nic.rdma_link_layer}"
        if nic.rdma_rate:
            rdma += f" {nic.rdma_rate}"
        words.append(rdma)
    if nic.numa_node is not None:
        words.append(f"NUMA {nic.numa_node}")
    return " · ".join(words)


def path_short(path: str | None) -> str:
    """A NIC's path to a GPU as nvidia-smi writes it: "PIX", "SYS", or "?"."""
    return PATHS.get(path or "", "?")


def nearest_gpus(nic: Nic, topology: Topology) -> tuple[str, list[int]] | None:
    """The NIC's closest path to a GPU and the GPUs at it: ("single", [2, 3]); None where no
    path is known. GPUDirect RDMA wants a GPU and its NIC on one switch."""
    known = [(path, place.index) for path, place in zip(nic.gpu_paths, topology.gpus, strict=False)
             if path in PATHS]  # fmt: skip
    if not known:
        return None
    closest = min((path for path, _ in known), key=KINDS.index)
    return closest, [index for path, index in known if path == closest]


def gpu_names(indices: list[int]) -> str:
    """ "GPU 0–3" for a run of indices, else "GPU 0,2,5"."""
    ordered = sorted(indices)
    if len(ordered) > 2 and ordered == list(range(ordered[0], ordered[-1] + 1)):
        return f"GPU {ordered[0]}–{ordered[-1]}"
    return "GPU " + ",".join(str(index) for index in ordered)


# --- measured over the links -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PeerFigure:
    """A peer copy's measured bandwidth over the link it crossed, largest size measured."""

    link: Link
    gbps: float
    """GB/s from `link.a` to `link.b`."""
    back_gbps: float | None
    """From `link.b` to `link.a`, where measured."""
    nbytes: int

    @property
    def of_nominal(self) -> float | None:
        nominal = self.link.nominal_gbps
        return self.gbps / nominal if nominal else None


def peer_copies(results: list[KernelResult]) -> dict[tuple[int, int], KernelResult]:
    """(source GPU, destination GPU) -> its peer copy at the largest size measured. Copies from
    before results named their GPUs (gpu_set) are left out: CUDA's numbering is not NVML's."""
    best: dict[tuple[int, int], KernelResult] = {}
    for result in results:
        if result.direction != "p2p" or result.gbps is None or len(result.gpu_set) != 2:
            continue
        key = (result.gpu_set[0], result.gpu_set[1])
        held = best.get(key)
        if held is None or result.params.get("bytes", 0) >= held.params.get("bytes", 0):
            best[key] = result
    return best


def peer_figures(
    topology: Topology, gpus: list[GpuInfo], results: list[KernelResult]
) -> list[PeerFigure]:
    """Every GPU pair a peer copy measured, once, with the link it crossed."""
    best = peer_copies(results)
    figures = []
    for (a, b), result in sorted(best.items()):
        back = best.get((b, a))
        if a > b and back is not None:
            continue  # shown with its reverse
        assert result.gbps is not None
        figures.append(
            PeerFigure(
                link(topology, gpus, a, b),
                result.gbps,
                back.gbps if back is not None else None,
                result.params.get("bytes", 0),
            )
        )
    return figures


def allreduce_figures(results: list[KernelResult]) -> list[KernelResult]:
    """Per rank count and GPU set, the all-reduce at the largest size measured: the figure to
    set beside the links it ran over."""
    largest: dict[tuple[int, str], KernelResult] = {}
    for result in results:
        if result.kind != "allreduce" or result.error is not None or result.busbw_gbps is None:
            continue
        key = (result.params.get("ranks", 0), result.placement or "")
        held = largest.get(key)
        if held is None or result.params.get("bytes", 0) >= held.params.get("bytes", 0):
            largest[key] = result
    return [largest[key] for key in sorted(largest)]
