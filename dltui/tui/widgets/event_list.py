"""A server's health events and alerts, newest first, the conditions still up marked: for the
detail screen. Times are the agent's, placed on this client's clock like its samples."""

from __future__ import annotations

import time

from textual.content import Content

from dltui.protocol.messages import Event
from dltui.tui.widgets.panel import FleetPanel
from dltui.tui.widgets.server_flags import SEVERITY_STYLES, describe_event, open_events

SHOWN = 12


def event_line(event: Event, offset: float | None, up: bool) -> Content:
    when = time.strftime("%H:%M:%S", time.localtime(event.wall - (offset or 0.0)))
    mark = "●" if up else ("✓" if event.state == "resolved" else " ")
    return Content.assemble(f"{mark} {when} ", (f"{event.severity:<8}", SEVERITY_STYLES[
        event.severity]), f" {event.kind:<14} ", describe_event(event))  # fmt: skip


class EventList(FleetPanel):
    DEFAULT_CLASSES = "-boxed"

    def _open(self) -> list[Event]:
        """Open as the header and the title count them: conditions up, recent XIDs."""
        return open_events(self.server, self.view.timebase.now(self.server.source))

    def title(self) -> str:
        book = self.server.events
        return f"Health events ({len(self._open())} open, {len(book.events)} in all)"

    def lines(self, width: int) -> list[Content]:
        book = self.server.events
        if not book.events:
            return [Content.styled("none: no health event or alert from this server",
                                   "$text-muted")]  # fmt: skip
        up = {id(event) for event in self._open()}
        recent = list(book.events)[-SHOWN:][::-1]
        return [event_line(e, self.server.offset, id(e) in up) for e in recent]
