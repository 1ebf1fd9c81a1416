"""One server in full (`d`, or a click on its header): what it is, every GPU with tall charts,
throttle reasons in sentences and its processes, and each benchmark case's telemetry."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Header, Static

from dltui.fleet.state import Fleet, ServerView
from dltui.formatting import fmt_memory
from dltui.tui.view import MonitorView
from dltui.tui.widgets.event_list import EventList
from dltui.tui.widgets.fitted_footer import FittedFooter
from dltui.tui.widgets.gpu_detail import GpuDetail
from dltui.tui.widgets.host_panel import HostPanel
from dltui.tui.widgets.job_panel import JobPanel
from dltui.tui.widgets.mig_panel import MigPanel, has_mig
from dltui.tui.widgets.panel import FleetPanel
from dltui.tui.widgets.phase_table import PhaseTable
from dltui.tui.widgets.process_groups import ProcessGroups
from dltui.tui.widgets.server_header import gpu_summary, link_state

REDRAW_S = 0.25
GPU_MIN_WIDTH = 60


class ServerInfo(FleetPanel):
    """Hostname, link, and the inventory in full: what a buyer writes down."""

    DEFAULT_CSS = """
    ServerInfo {
        background: $boost;
        padding: 0 1;
    }
    """

    def lines(self, width: int) -> list[Content]:
        server = self.server
        lines = [Content.assemble((server.name, "bold $text-accent"), ("  " + server.source,
                                  "$text-muted"))]  # fmt: skip
        lines.append(gpu_summary(server.inventory))
        lines += link_state(server, self.view.timebase)
        inventory = server.inventory
        if inventory is not None:
            cpu = f"{inventory.cpu_model} × {inventory.cpu_count}, "
            cpu += f"{fmt_memory(inventory.memory_total)} · {inventory.os}"
            lines.append(Content.styled(cpu, "$text-muted"))
            software = [f"driver {inventory.driver_version}"] if inventory.driver_version else []
            if inventory.cuda_version:
                software.append(f"CUDA {inventory.cuda_version}")
            software += [f"{name} {v}" for name, v in inventory.frameworks.items()]
            software.append(f"python {inventory.python}" if inventory.python else "")
            lines.append(Content.styled(" · ".join(s for s in software if s), "$text-muted"))
        return [part for line in lines for part in line.wrap(width)]


class DetailScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,d", "app.pop_screen", "Back"),
        Binding("left", "step(-1)", "Previous server"),
        Binding("right", "step(1)", "Next server"),
        Binding("w", "window", "Window"),
        Binding("p", "phases", "Phases"),
    ]

    DEFAULT_CSS = """
    DetailScreen {
        & #gpus {
            grid-size: 1;
            grid-gutter: 0 1;
            height: auto;
        }
        & .heading {
            padding: 0 1;
            color: $text-muted;
            text-style: bold;
        }
        & PhaseTable {
            height: auto;
            max-height: 20;
        }
    }
    """

    def __init__(self, server: ServerView, fleet: Fleet, view: MonitorView) -> None:
        super().__init__()
        self.server = server
        self.fleet = fleet
        self.view = view
        self.panels: list[FleetPanel] = []
        self.owners: list[FleetPanel] = [ProcessGroups(server, view), EventList(server, view)]
        """Whose work is on the GPUs, and the health events (issue #14)."""
        if has_mig(server):
            self.owners.append(MigPanel(server, view))

    def compose(self) -> ComposeResult:
        server, view = self.server, self.view
        info = ServerInfo(server, view)
        host = HostPanel(server, view)
        host.add_class("-boxed")
        host.styles.height = 9
        self.panels = [info, JobPanel(server, view), host]
        inventory = server.inventory
        indices = sorted({gpu.index for gpu in inventory.gpus} if inventory else set()
                         | server.gpus.keys())  # fmt: skip
        gpus = [GpuDetail(server, view, index) for index in indices]
        self.panels += gpus
        yield Header()
        with VerticalScroll():
            yield info
            yield self.panels[1]
            yield self.panels[2]
            yield Grid(*gpus, id="gpus")
            yield from self.owners
            yield Static("Benchmark cases on this server, with the telemetry while each ran",
                         classes="heading")  # fmt: skip
            yield PhaseTable(self.fleet, self.view.timebase, server.source)
        yield FittedFooter()

    def on_mount(self) -> None:
        self.sub_title = f"{self.server.name} in detail"
        self.redraw()
        self.set_interval(REDRAW_S, self.redraw)

    def on_resize(self) -> None:
        """GPUs two or more abreast where the terminal is wide enough."""
        self.query_one("#gpus", Grid).styles.grid_size_columns = max(
            1, min(len(self.panels) - 3, self.size.width // GPU_MIN_WIDTH)
        )

    def redraw(self) -> None:
        version = (self.fleet.version, self.view.version)
        for panel in (*self.panels, *self.owners):
            panel.sync(version)
        self.panels[1].set_class(self.server.latest_job is not None, "-shown")
        self.query_one(PhaseTable).refresh_rows()

    def action_step(self, direction: int) -> None:
        servers = list(self.fleet.servers.values())
        index = servers.index(self.server) if self.server in servers else 0
        server = servers[(index + direction) % len(servers)]
        self.app.switch_screen(DetailScreen(server, self.fleet, self.view))

    def action_window(self) -> None:
        self.view.next_window()

    def action_phases(self) -> None:
        """Focus the table of this server's benchmark cases (← → move a column)."""
        table = self.query_one(PhaseTable)
        table.scroll_visible(animate=False)
        table.focus()
