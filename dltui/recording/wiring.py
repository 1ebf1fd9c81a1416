"""Each recorded server's wiring beside what it measured over it, for the report.

Per server: its wiring in lines (host, GPUs, NICs), the GPU matrix with each pair's link kind
and, laid over it, the peer copy measured from row to column; each measured pair against its
link's nominal rate; and its all-reduce figures with the GPUs they ran on. Tables are rows of
text, drawn as Markdown or HTML by report.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dltui.formatting import fmt_bytes, fmt_gbps
from dltui.plans.topology import (
    allreduce_figures,
    matrix,
    pcie_text,
    peer_copies,
    peer_figures,
)
from dltui.protocol.bench_results import KernelResult
from dltui.protocol.inventory import Inventory
from dltui.protocol.messages import JobResult, Welcome
from dltui.recording.format import Record
from dltui.result_text import peer_text, wiring_lines

Rows = list[list[str]]


@dataclass
class ServerWiring:
    title: str
    lines: list[str]
    matrix: Rows = field(default_factory=list)
    """Header, then a row per GPU: the link to each GPU, and the GB/s measured to it."""
    peers: list[str] = field(default_factory=list)
    allreduce: Rows = field(default_factory=list)


def server_wirings(recordings: list[tuple[str, list[Record]]]) -> list[ServerWiring]:
    """One per server of each recording (name, records), in the order they welcomed."""
    found = []
    for name, records in recordings:
        inventories = {r.source: r.message.inventory for r in records
                       if isinstance(r.message, Welcome)}  # fmt: skip
        hostnames = [inventory.hostname for inventory in inventories.values()]
        for source, inventory in inventories.items():
            host = inventory.hostname
            if hostnames.count(host) > 1:  # namesakes: told apart by address, as `record` does
                host = f"{host}@{source}"
            results = [r.message.result for r in records
                       if r.source == source and isinstance(r.message, JobResult)
                       and r.message.result is not None]  # fmt: skip
            found.append(_server(f"{name}: {host}", inventory, results))
    return found


def _server(title: str, inventory: Inventory, results: list[KernelResult]) -> ServerWiring:
    wiring = ServerWiring(title, wiring_lines(inventory), allreduce=_allreduce(results))
    topology = inventory.topology
    if topology is None or not inventory.gpus:
        return wiring
    copies = peer_copies(results)
    places = {place.index: place for place in topology.gpus}
    header = ["", *(f"GPU{gpu.index}" for gpu in inventory.gpus), "NUMA", "PCIe"]
    wiring.matrix = [header]
    for gpu, row in zip(inventory.gpus, matrix(topology, inventory.gpus), strict=True):
        cells = []
        for link in row:
            if link is None:
                cells.append("X")
                continue
            copy = copies.get((link.a, link.b))
            measured = f" {copy.gbps:.0f}" if copy is not None and copy.gbps is not None else ""
            cells.append(link.short + measured)
        place = places.get(gpu.index)
        numa = place.numa_node if place is not None else None
        wiring.matrix.append(
            [f"GPU{gpu.index}", *cells, "–" if numa is None else str(numa), pcie_text(gpu)]
        )
    wiring.peers = [peer_text(figure) for figure in peer_figures(topology, inventory.gpus, results)]
    return wiring


def _allreduce(results: list[KernelResult]) -> Rows:
    rows = [["ranks", "GPUs", "size", "busbw", "algbw"]]
    for result in allreduce_figures(results):
        rows.append([
            str(result.params.get("ranks", 0)), result.placement or "–",
            fmt_bytes(result.params.get("bytes")), fmt_gbps(result.busbw_gbps or 0),
            fmt_gbps(result.gbps or 0),
        ])  # fmt: skip
    return rows if len(rows) > 1 else []
