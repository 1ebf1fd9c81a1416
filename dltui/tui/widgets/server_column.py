"""One server, top to bottom: header, host, one panel per GPU; columns sit side by side."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll

from dltui.fleet.state import ServerView
from dltui.tui.widgets.gpu_panel import GpuPanel
from dltui.tui.widgets.host_panel import HostPanel
from dltui.tui.widgets.job_panel import JobPanel
from dltui.tui.widgets.server_header import ServerHeader


class ServerColumn(Vertical):
    """The header stays put; host and GPU panels scroll under it when a box has many GPUs."""

    DEFAULT_CSS = """
    ServerColumn {
        width: 40;
        height: 1fr;
        & > VerticalScroll {
            height: 1fr;
            scrollbar-size-vertical: 1;
        }
    }
    """

    def __init__(self, server: ServerView) -> None:
        super().__init__()
        self.server = server
        self.header = ServerHeader(server)
        self.host = HostPanel(server)
        self.job = JobPanel(server)
        self.body = VerticalScroll(self.job, self.host)
        self.gpu_panels: dict[int, GpuPanel] = {}
        self._drawn_version = -1

    def compose(self) -> ComposeResult:
        yield self.header
        yield self.body

    def sync(self, version: int) -> None:
        """Redraw what is on screen and changed since it last drew (a panel scrolled out of
        view keeps its version and catches up when it is back; refreshing it while hidden
        would make Textual lay out every column again)."""
        self.header.sync(version)
        if self.server.link != "live":
            self.header.refresh()  # 'offline since … (Ns ago)' moves on without frames
        if version != self._drawn_version:
            self._drawn_version = version
            self._add_gpu_panels(version)
            self.job.set_class(self.server.latest_job is not None, "-shown")
        for panel in (self.job, self.host, *self.gpu_panels.values()):
            if self.screen.can_view_partial(panel):
                panel.sync(version)

    def _add_gpu_panels(self, version: int) -> None:
        inventory = self.server.inventory
        indices = {gpu.index for gpu in inventory.gpus} if inventory else set()
        new = sorted((indices | self.server.gpus.keys()) - self.gpu_panels.keys())
        if new:
            panels = [GpuPanel(self.server, index) for index in new]
            for panel in panels:
                panel.sync(version)  # titled before it is first drawn
            self.gpu_panels.update(zip(new, panels, strict=True))
            self.body.mount_all(panels)
