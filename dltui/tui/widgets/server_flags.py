"""What a server's header flags on its last row when there is nothing else to say there:
someone else's work on its GPUs ("busy: user alice (job 41233)") or its worst health
condition up (a link at x8, a hardware slowdown), so a comparison that would mislead says so
before anyone reads its figures; and when its events happened, for the marks on its charts."""

from __future__ import annotations

from textual.content import Content

from dltui.fleet.health import worst_event
from dltui.fleet.state import ServerView
from dltui.plans.occupancy import describe_others_work
from dltui.protocol.messages import Event

SEVERITY_STYLES = {"info": "$text-muted", "warning": "bold $text-warning",
                   "critical": "bold $text-error"}  # fmt: skip


def open_events(server: ServerView, now: float) -> list[Event]:
    """The server's open events at `now` (this client's clock): conditions up, and XIDs and
    error counts that grew within ONCE_OPEN_S."""
    return server.events.open_events(now + (server.offset or 0.0))


def server_flag(server: ServerView, now: float) -> Content | None:
    """The one line to flag, where there is one: a critical event open, else someone else's
    work on the GPUs, else the worst other open event (with how many more are open)."""
    opened = open_events(server, now)
    worst = worst_event(opened)
    sick = None
    if worst is not None:
        more = f" (+{len(opened) - 1} more)" if len(opened) > 1 else ""
        sick = Content.styled(f"⚠ {describe_event(worst)}{more}", SEVERITY_STYLES[worst.severity])
        if worst.severity == "critical":
            return sick
    busy = describe_others_work(server.processes)
    if busy is not None:
        return Content.styled(f"busy: {busy}", "bold $text-warning")
    return sick


def event_times(server: ServerView) -> list[float]:
    """When the server's events happened, on this client's clock: marks on its charts."""
    return [event.wall - (server.offset or 0.0) for event in server.events.events]


def describe_event(event: Event) -> str:
    """ "GPU 5: PCIe link trained at gen5 x8 (of x16)" """
    where = f"GPU {event.gpu}" if event.gpu is not None else "host"
    return f"{where}: {event.detail}"
