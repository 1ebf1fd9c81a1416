"""What a server's header flags on its last row when there is nothing else to say there:
someone else's work on its GPUs ("busy: user alice (job 41233)") or its worst health
condition up (a link at x8, a hardware slowdown), so a comparison that would mislead says so
before anyone reads its figures; and when its events happened, for the marks on its charts."""

from __future__ import annotations

from textual.content import Content

from dltui.fleet.state import ServerView
from dltui.plans.occupancy import busy_words
from dltui.protocol.messages import Event

SEVERITY_STYLES = {"info": "$text-muted", "warning": "bold $text-warning",
                   "critical": "bold $text-error"}  # fmt: skip
SEVERITY_ORDER = ("info", "warning", "critical")


def server_flag(server: ServerView) -> Content | None:
    """The one line to flag, where there is one: a critical condition, else someone else's
    work on the GPUs, else the worst other condition (with how many more are up)."""
    raised = sorted(server.events.raised.values(),
                    key=lambda e: (SEVERITY_ORDER.index(e.severity), e.id))  # fmt: skip
    sick = None
    if raised:
        worst = raised[-1]
        more = f" (+{len(raised) - 1} more)" if len(raised) > 1 else ""
        sick = Content.styled(f"⚠ {event_words(worst)}{more}", SEVERITY_STYLES[worst.severity])
        if worst.severity == "critical":
            return sick
    busy = busy_words(server.processes)
    if busy is not None:
        return Content.styled(f"busy: {busy}", "bold $text-warning")
    return sick


def event_times(server: ServerView) -> list[float]:
    """When the server's events happened, on this client's clock: marks on its charts."""
    return [event.wall - (server.offset or 0.0) for event in server.events.events]


def event_words(event: Event) -> str:
    """ "GPU 5: PCIe link trained at gen5 x8 (of x16)" """
    where = f"GPU {event.gpu}" if event.gpu is not None else "host"
    return f"{where}: {event.detail}"
