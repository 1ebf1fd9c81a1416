"""The launcher's flag: the servers whose GPUs run someone else's work, which an agent refuses
to benchmark unless the run is forced, and the box that forces it (the results then say
whose work they shared the GPUs with)."""

from __future__ import annotations

from dataclasses import replace

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Checkbox, Static

from dltui.fleet.compare import server_names
from dltui.fleet.state import Fleet
from dltui.plans.occupancy import describe_others_work
from dltui.tui.launch_plans import Launch


def busy_servers(fleet: Fleet) -> list[str]:
    """ "gpu-01: user alice (job 41233) on GPU 0" for each live server that is busy."""
    names = server_names(fleet)
    return [
        f"{names[source]}: {words}"
        for source, server in fleet.servers.items()
        if server.link == "live" and (words := describe_others_work(server.processes))
    ]


class BusyNote(Vertical):
    DEFAULT_CSS = """
    BusyNote {
        height: auto;
        & Checkbox {
            border: none;
            padding: 0;
        }
    }
    """

    def __init__(self, fleet: Fleet) -> None:
        super().__init__()
        self.busy = busy_servers(fleet)
        self.display = bool(self.busy)

    def compose(self) -> ComposeResult:
        lines = [Content.styled("busy: " + line, "bold $text-warning") for line in self.busy]
        yield Static(Content("\n").join(lines))
        yield Checkbox("run anyway (the agents refuse busy GPUs otherwise)", id="force",
                       compact=True)  # fmt: skip

    def forced(self, launch: Launch) -> Launch:
        """The launch as the box says: its plans forced onto busy GPUs, or as they were."""
        if not self.query_one(Checkbox).value:
            return launch
        return Launch([(replace(plan, force=True), across) for plan, across in launch.plans],
                      launch.description)  # fmt: skip
