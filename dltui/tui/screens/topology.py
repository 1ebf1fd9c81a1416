"""How a server is wired (`T` on a server): the GPU matrix with each pair's link in colour and,
in words, what each colour is; every GPU's NUMA node, CPUs and PCIe link (flagged where it
trained below its maximum); the NICs with their path to each GPU; and what benchmarks measured
over those links. The results view's Topology tab (`WiringSummary`) puts every server's wiring
beside its peer copies and all-reduce figures.

All of it comes from frames: the inventory's topology in the server's welcome, and its results.
Wide terminals show the wiring and the measurements side by side, narrow ones one above the
other.
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Header, Static

from dltui.fleet.compare import server_names
from dltui.fleet.state import Fleet, ServerView
from dltui.formatting import fmt_bytes, fmt_gbps
from dltui.plans.topology import (
    Link,
    allreduce_figures,
    gpu_names,
    link_groups,
    matrix,
    path_short,
    pcie_below_max,
    peer_copies,
    peer_figures,
)
from dltui.protocol.bench_results import KernelResult, ModelResult
from dltui.protocol.inventory import Inventory
from dltui.result_text import gpu_wiring, group_text, host_wiring, nic_wiring, peer_text
from dltui.tui.widgets.fitted_footer import FittedFooter

REDRAW_S = 1.0
WIDE = 150
"""Columns from which wiring and measurements stand side by side."""
KIND_STYLES = {
    "nvlink": "bold $text-success",
    "nvswitch": "bold $text-success",
    "internal": "$text-success",
    "single": "$text-primary",
    "multiple": "$text-secondary",
    "hostbridge": "$text-warning",
    "node": "$text-warning",
    "system": "$text-error",
    "unknown": "$text-muted",
}
"""A link's colour: green for NVLink, cooler to warmer as a PCIe path crosses more."""


def _heading(text: str) -> Content:
    return Content.styled(text, "bold $text-muted")


def _results(server: ServerView) -> tuple[list[KernelResult], list[ModelResult]]:
    jobs = server.jobs.values()
    return ([r for job in jobs for r in job.results],
            [r for job in jobs for r in job.model_results])  # fmt: skip


def matrix_lines(inventory: Inventory) -> list[Content]:
    """The GPU matrix in nvidia-smi's codes, coloured by kind, with each GPU's NUMA node, CPUs
    and PCIe link at the end of its row."""
    topology = inventory.topology
    if topology is None or not inventory.gpus:
        return []
    places = {place.index: place for place in topology.gpus}
    rows = matrix(topology, inventory.gpus)
    cell = max(4, *(len(link.short) for row in rows for link in row if link)) + 1
    affinities = [place.cpu_affinity or "–" for place in places.values()]
    cpus_width = max(5, *(len(cpus) for cpus in affinities)) + 1
    head = "".join(f"GPU{gpu.index}".ljust(cell) for gpu in inventory.gpus)
    lines = [Content.styled(f"{'':6}{head}NUMA {'CPUs':<{cpus_width}}PCIe", "bold")]
    for gpu, row in zip(inventory.gpus, rows, strict=True):
        parts: list[tuple[str, str]] = [(f"GPU{gpu.index}".ljust(6), "bold")]
        for link in row:
            parts.append(_cell(link, cell))
        place = places.get(gpu.index)
        numa = "–" if place is None or place.numa_node is None else str(place.numa_node)
        cpus = (place.cpu_affinity if place is not None else None) or "–"
        parts.append((f"{numa:<5}{cpus:<{cpus_width}}", ""))
        flag = pcie_below_max(gpu)
        link_text = f"gen{gpu.pcie_gen} x{gpu.pcie_width}" if gpu.pcie_gen else "?"
        parts.append((link_text, ""))
        if flag:
            parts.append((f" ⚠ {flag}", "bold $text-warning"))
        lines.append(Content.assemble(*parts))
    return lines


def _cell(link: Link | None, width: int) -> tuple[str, str]:
    if link is None:
        return "X".ljust(width), "$text-muted"
    return link.short.ljust(width), KIND_STYLES.get(link.kind, "")


def legend_lines(inventory: Inventory) -> list[Content]:
    """Each kind of link in words, with its nominal rate, P2P and the pairs it joins."""
    topology = inventory.topology
    if topology is None:
        return []
    groups = link_groups(topology, inventory.gpus)
    pairs = sum(len(links) for links in groups)
    lines = []
    for links in groups:
        code, _, words = group_text(links, pairs).partition(" ")
        lines.append(Content.assemble((code, KIND_STYLES.get(links[0].kind, "")), " " + words))
    return lines


def host_lines(inventory: Inventory) -> list[Content]:
    topology = inventory.topology
    if topology is None:
        return [Content.styled("this agent does not report its wiring (older than topology)",
                               "$text-muted")]  # fmt: skip
    lines = [Content(host_wiring(topology))]
    if topology.unanswered:
        unanswered = ", ".join(topology.unanswered)
        lines.append(Content.styled(f"NVML did not answer: {unanswered}", "$text-muted"))
    return lines


def gpu_lines(inventory: Inventory) -> list[Content]:
    topology = inventory.topology
    if topology is None:
        return []
    return [Content(f"GPU{gpu.index} {gpu.name} · {gpu_wiring(topology, gpu)}")
            for gpu in inventory.gpus]  # fmt: skip


def nic_lines(inventory: Inventory) -> list[Content]:
    """Each NIC in words, then its path to every GPU in nvidia-smi's codes."""
    topology = inventory.topology
    if topology is None:
        return []
    if not topology.nics:
        return [Content.styled("no NIC on a PCI device", "$text-muted")]
    lines = []
    for nic in topology.nics:
        lines.append(Content(nic_wiring(nic, topology)))
        if nic.gpu_paths:
            indices = [place.index for place in topology.gpus]
            paths: list[tuple[str, str]] = [(f"  to {gpu_names(indices)}: ", "$text-muted")]
            for path in nic.gpu_paths:
                style = KIND_STYLES.get(path or "unknown", "")
                paths.append((f"{path_short(path):<5}", style))
            lines.append(Content.assemble(*paths))
    return lines


def bandwidth_lines(server: ServerView) -> list[Content]:
    """The peer copies' matrix, GB/s from row to column, each in its link's colour: the
    bandwidth matrix with the wiring laid over it."""
    inventory = server.inventory
    if inventory is None or inventory.topology is None:
        return []
    copies = peer_copies(_results(server)[0])
    if not copies:
        return []
    rows = matrix(inventory.topology, inventory.gpus)
    head = "".join(f"GPU{gpu.index}".ljust(6) for gpu in inventory.gpus)
    lines = [Content.styled(f"{'GB/s':6}{head}", "bold")]
    for gpu, row in zip(inventory.gpus, rows, strict=True):
        parts: list[tuple[str, str]] = [(f"GPU{gpu.index}".ljust(6), "bold")]
        for link in row:
            copy = copies.get((link.a, link.b)) if link is not None else None
            if link is None or copy is None or copy.gbps is None:
                parts.append(("·".ljust(6) if link else "X".ljust(6), "$text-muted"))
            else:
                parts.append((f"{copy.gbps:.0f}".ljust(6), KIND_STYLES.get(link.kind, "")))
        lines.append(Content.assemble(*parts))
    return lines


def measured_lines(server: ServerView) -> list[Content]:
    """Peer copies over their links, all-reduce with its GPUs, training runs' GPU sets."""
    inventory = server.inventory
    kernels, models = _results(server)
    lines = []
    if inventory is not None and inventory.topology is not None:
        for figure in peer_figures(inventory.topology, inventory.gpus, kernels):
            lines.append(Content.styled(peer_text(figure), KIND_STYLES.get(figure.link.kind, "")))
    for result in allreduce_figures(kernels):
        size = fmt_bytes(result.params.get("bytes"))
        where = result.placement or (
            "CPU processes" if result.device == "cpu" else "GPUs not named"
        )
        busbw = fmt_gbps(result.busbw_gbps or 0.0)  # allreduce_figures keeps measured ones
        lines.append(Content(f"all-reduce ×{result.params.get('ranks', 0)} {size}: busbw "
                             f"{busbw} · {where}"))  # fmt: skip
    for model in models:
        if model.placement and model.images_per_s:
            lines.append(Content(f"{model.model} ×{model.gpus}: {model.images_per_s:,.0f} "
                                 f"img/s · {model.placement}"))  # fmt: skip
    return lines or [Content.styled("nothing measured over these links yet", "$text-muted")]


class WiringBlock(Static):
    """One titled part of a server's wiring; hidden while it has nothing to say."""

    DEFAULT_CSS = """
    WiringBlock {
        height: auto;
        margin-bottom: 1;
    }
    """

    def __init__(self, title: str) -> None:
        super().__init__()
        self.title = title

    def show(self, lines: list[Content]) -> None:
        self.display = bool(lines)
        self.update(Content("\n").join([_heading(self.title), *lines]))


class ServerWiring(Horizontal):
    """One server: its wiring (left) beside what it measured (right); `full` adds its GPUs in
    words and its NICs, as the topology screen shows them."""

    DEFAULT_CSS = """
    ServerWiring {
        height: auto;
        layout: vertical;
        &.-wide {
            layout: horizontal;
        }
        & > Vertical {
            width: 1fr;
            height: auto;
            padding: 0 1;
        }
    }
    """

    def __init__(self, server: ServerView, full: bool, name: str | None = None) -> None:
        super().__init__()
        self.server = server
        self.full = full
        self.label = name or server.name
        """The server's name for people: hostname@address where two share a hostname."""
        self.blocks = {name: WiringBlock(title) for name, title in (
            ("host", f"{self.label}: host"), ("matrix", "GPU to GPU"), ("links", "links"),
            ("gpus", "GPUs"), ("nics", "NICs"),
            ("bandwidth", "peer copies, row to column, in their links' colours"),
            ("measured", "measured over the links"),
        )}  # fmt: skip

    def compose(self) -> ComposeResult:
        blocks = self.blocks
        yield Vertical(blocks["host"], blocks["matrix"], blocks["links"])
        yield Vertical(blocks["gpus"], blocks["nics"], blocks["bandwidth"], blocks["measured"])

    def redraw(self) -> None:
        inventory = self.server.inventory
        blocks = self.blocks
        if inventory is None:
            blocks["host"].show([Content.styled("waiting for the inventory…", "$text-muted")])
            return
        blocks["host"].title = f"{self.label}: host"
        blocks["host"].show(host_lines(inventory))
        blocks["matrix"].show(matrix_lines(inventory))
        blocks["links"].show(legend_lines(inventory))
        blocks["gpus"].show(gpu_lines(inventory) if self.full else [])
        blocks["nics"].show(nic_lines(inventory) if self.full else [])
        blocks["bandwidth"].show(bandwidth_lines(self.server))
        blocks["measured"].show(measured_lines(self.server))

    def on_resize(self) -> None:
        self.set_class(self.size.width >= WIDE, "-wide")


class TopologyScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,T", "app.pop_screen", "Back"),
        Binding("left", "step(-1)", "Previous server"),
        Binding("right", "step(1)", "Next server"),
    ]

    def __init__(self, server: ServerView, fleet: Fleet) -> None:
        super().__init__()
        self.server = server
        self.fleet = fleet
        self.view = ServerWiring(server, True, server_names(fleet).get(server.source))
        self._drawn: int | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll():
            yield self.view
        yield FittedFooter()

    def on_mount(self) -> None:
        self.sub_title = f"{self.view.label}: how it is wired"
        self.redraw()
        self.set_interval(REDRAW_S, self.redraw)

    def redraw(self) -> None:
        if self._drawn != self.fleet.version:
            self._drawn = self.fleet.version
            self.view.redraw()

    def action_step(self, direction: int) -> None:
        servers = list(self.fleet.servers.values())
        index = servers.index(self.server) if self.server in servers else 0
        server = servers[(index + direction) % len(servers)]
        self.app.switch_screen(TopologyScreen(server, self.fleet))


class WiringSummary(VerticalScroll):
    """Every server's wiring beside what it measured: the results view's Topology tab."""

    DEFAULT_CSS = """
    WiringSummary {
        height: 1fr;
    }
    """

    def __init__(self, fleet: Fleet) -> None:
        super().__init__()
        self.fleet = fleet
        self._drawn: int | None = None

    def on_mount(self) -> None:
        self.refresh_servers()
        self.set_interval(REDRAW_S, self.refresh_servers)

    def refresh_servers(self) -> None:
        if self._drawn == self.fleet.version:
            return
        self._drawn = self.fleet.version
        shown = {view.server.source for view in self.query_children(ServerWiring)}
        names = server_names(self.fleet)
        for source, server in self.fleet.servers.items():
            if source not in shown:
                self.mount(ServerWiring(server, False, names[source]))
        for view in self.query_children(ServerWiring):
            view.label = names[view.server.source]  # a namesake may have joined since
            view.redraw()
