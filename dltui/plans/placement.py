"""Which GPUs a scale-up run uses, chosen from the topology, and the GPU counts of a sweep.

A run on k of a server's n GPUs should use the k that talk best: two on one NVLink or PCIe
switch, four in one NUMA node. The launcher names the sets a sweep will use; the worker, which
reads the same topology, places the ranks on them (CUDA_VISIBLE_DEVICES in rank order). The
choice is deterministic, so both find the same set.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import combinations
from math import comb

from dltui.plans.topology import Link, gpu_names, link
from dltui.protocol.inventory import GpuInfo, Inventory
from dltui.protocol.topology import Topology

EXHAUSTIVE = 5000
"""Candidate sets tried one by one up to this many (8 GPUs: 70 at most); past it, grown
greedily from each GPU."""


@dataclass(frozen=True, slots=True)
class GpuSet:
    gpus: list[int]
    """NVML indices, in rank order: each next to the one before where the topology says."""
    words: str
    """Why these: "GPU 0,1 · NVLink ×18 · NUMA 0"."""


class _Links:
    """Every pair's link, looked up once."""

    def __init__(self, topology: Topology, gpus: list[GpuInfo]) -> None:
        self.topology = topology
        indices = [gpu.index for gpu in gpus]
        self.pairs = {
            (a, b): link(topology, gpus, a, b) for a in indices for b in indices if a != b
        }
        self.numa = {place.index: place.numa_node for place in topology.gpus}

    def worst(self, chosen: Iterable[int]) -> Link | None:
        links = [self.pairs[pair] for pair in combinations(sorted(chosen), 2)]
        return max(links, key=lambda found: (found.distance, -found.links), default=None)

    def cost(self, chosen: tuple[int, ...]) -> tuple[int, int, int, int, tuple[int, ...]]:
        """Smaller is better: the worst link, NUMA nodes spanned, all links, fewer NVLinks."""
        links = [self.pairs[pair] for pair in combinations(chosen, 2)]
        worst = max((found.distance for found in links), default=0)
        nodes = len({self.numa.get(index) for index in chosen})
        total = sum(found.distance for found in links)
        return worst, nodes, total, -sum(found.links for found in links), chosen

    def best(self, indices: list[int], count: int) -> tuple[int, ...]:
        if comb(len(indices), count) <= EXHAUSTIVE:
            return min(combinations(indices, count), key=self.cost)
        return min((self.grown(start, indices, count) for start in indices), key=self.cost)

    def grown(self, start: int, indices: list[int], count: int) -> tuple[int, ...]:
        chosen = [start]
        while len(chosen) < count:
            rest = [index for index in indices if index not in chosen]
            chosen.append(min(rest, key=lambda index: self.cost((*chosen, index))))
        return tuple(sorted(chosen))

    def ring(self, chosen: tuple[int, ...]) -> list[int]:
        """Rank order: from the lowest index, each next the closest of those left."""
        order, rest = [chosen[0]], list(chosen[1:])
        while rest:
            last = order[-1]
            step = min(rest, key=lambda index: (self.pairs[last, index].distance, index))
            order.append(step)
            rest.remove(step)
        return order


def choose(inventory: Inventory, count: int) -> GpuSet:
    """The `count` GPUs of this server that talk best, in rank order, and why. Without a
    topology (an agent older than it, or NVML's silence): the first GPUs, and it says so."""
    gpus = inventory.gpus
    indices = [gpu.index for gpu in gpus]
    if not indices:
        return GpuSet([], "no GPU")
    count = min(max(count, 1), len(indices))
    topology = inventory.topology
    if topology is None or (count > 1 and not topology.pairs):
        chosen = indices[:count]
        return GpuSet(chosen, f"{gpu_names(chosen)} · the first GPUs: no topology from the agent")
    links = _Links(topology, gpus)
    best = links.best(indices, count)
    order = links.ring(best)
    return GpuSet(order, _describe_gpu_set(links, order))


def _describe_gpu_set(links: _Links, order: list[int]) -> str:
    """ "GPU 0,1 · NVLink ×18 · NUMA 0": the GPUs, the slowest link between them, their NUMA
    nodes."""
    words = [gpu_names(order)]
    worst = links.worst(order)
    if worst is not None:
        words.append(worst.words if len(order) == 2 else f"at worst {worst.words}")
    nodes = sorted({node for index in order if (node := links.numa.get(index)) is not None})
    if nodes:
        words.append("NUMA " + ",".join(str(node) for node in nodes))
    return " · ".join(words)


def sweep_counts(inventory: Inventory) -> list[int]:
    """GPU counts of a scale-up sweep along the topology: 1; 2; every GPU its closest kind of
    link joins (one NVSwitch fabric, one PCIe switch); every GPU of one NUMA node; all. Without
    a topology: 1, 2, 4 … and all (CPU: 1 and 2 processes)."""
    count = len(inventory.gpus) or 2
    topology = inventory.topology
    if not inventory.gpus or topology is None or not topology.pairs:
        counts = [1]
        while counts[-1] * 2 < count:
            counts.append(counts[-1] * 2)
        return sorted({*counts, count})
    links = _Links(topology, inventory.gpus)
    indices = [gpu.index for gpu in inventory.gpus]
    closest = links.cost(links.best(indices, 2))[0]
    together = max(
        k for k in range(2, count + 1) if links.cost(links.best(indices, k))[0] <= closest
    )
    per_node: dict[int, int] = {}
    for node in links.numa.values():
        if node is not None:
            per_node[node] = per_node.get(node, 0) + 1
    return sorted({1, 2, together, max(per_node.values(), default=count), count})


def sweep_sets(inventory: Inventory) -> list[GpuSet]:
    """The GPU set of each run of a scale-up sweep, as the worker will choose them."""
    return [choose(inventory, count) for count in sweep_counts(inventory)]
