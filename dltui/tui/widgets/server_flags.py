"""What a server's column flags under its header: someone else's work on its GPUs ("busy: user
alice (job 41233)") and its worst health condition up (a link at x8, a hardware slowdown), so a
comparison that would mislead says so before anyone reads its figures."""

from __future__ import annotations

from textual.content import Content

from dltui.fleet.state import ServerView
from dltui.plans.occupancy import busy_words
from dltui.protocol.messages import Event

SEVERITY_STYLES = {"info": "$text-muted", "warning": "bold $text-warning",
                   "critical": "bold $text-error"}  # fmt: skip
SEVERITY_ORDER = ("info", "warning", "critical")


def server_flags(server: ServerView) -> list[Content]:
    """The busy line and the worst condition up, each where there is one."""
    lines = []
    busy = busy_words(server.processes)
    if busy is not None:
        lines.append(Content.styled(f"busy: {busy}", "bold $text-warning"))
    raised = sorted(server.events.raised.values(),
                    key=lambda e: (SEVERITY_ORDER.index(e.severity), e.id))  # fmt: skip
    if raised:
        worst = raised[-1]
        more = f" (+{len(raised) - 1} more)" if len(raised) > 1 else ""
        lines.append(Content.styled(f"⚠ {event_words(worst)}{more}",
                                    SEVERITY_STYLES[worst.severity]))  # fmt: skip
    return lines


def event_times(server: ServerView) -> list[float]:
    """When the server's events happened, on this client's clock: marks on its charts."""
    return [event.wall - (server.offset or 0.0) for event in server.events.events]


def event_words(event: Event) -> str:
    """ "GPU 5: PCIe link trained at gen5 x8 (of x16)" """
    where = f"GPU {event.gpu}" if event.gpu is not None else "host"
    return f"{where}: {event.detail}"
