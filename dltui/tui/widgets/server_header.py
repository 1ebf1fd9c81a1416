"""The top of a server's column: which machine, what GPUs, and whether we can hear it."""

from __future__ import annotations

import textwrap
import time
from collections import Counter
from dataclasses import dataclass

from textual.content import Content
from textual.message import Message

from dltui.fleet.health import worst_of
from dltui.fleet.state import ServerView
from dltui.protocol.inventory import Inventory
from dltui.tui.layout import HEADER_ROWS
from dltui.tui.view import Timebase
from dltui.tui.widgets.panel import FleetPanel
from dltui.tui.widgets.server_flags import open_events, server_flag


def gpu_summary(inventory: Inventory | None) -> Content:
    """'8× NVIDIA H200', or why there is no GPU: the first thing a buyer compares."""
    if inventory is None:
        return Content.styled("waiting for inventory…", "$text-muted")
    if not inventory.gpus:
        words = Content.styled("no GPU", "bold $text-warning")
        if inventory.nvml_error:
            words += Content.styled(f" · {inventory.nvml_error}", "$text-muted")
        return words
    counts = Counter(gpu.name for gpu in inventory.gpus)
    return Content.styled(", ".join(f"{n}× {name}" for name, n in counts.items()), "bold")


def clock_time(t: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(t))


def as_of(server: ServerView) -> str:
    """'as of 13:43:10': when the values shown were measured, for a server we no longer hear."""
    if server.last_sample_time is None:
        return "no samples"
    return f"as of {clock_time(server.last_sample_time)}"


def link_state(server: ServerView, timebase: Timebase) -> tuple[Content, Content]:
    """The connection state in words, and on a second line what else to know: rtt and clock
    offset while live, when the values are from and why while down, where a replay is."""
    now = timebase.now(server.source)
    detail = Content.styled(server.last_error or "", "$text-error")
    if timebase.replay:
        if timebase.ended(server.source):
            state = Content.styled("■ recording ended", "bold $text-muted")
            return state, Content.styled(as_of(server), "$text-muted")
        return Content.styled(f"▷ recorded {clock_time(now)}", "bold $text-accent"), detail
    if server.link == "live":
        return Content.styled("● live  ", "bold $text-success") + link_quality(server), detail
    why = Content.styled(server.link_detail or "", "$text-muted")
    if server.link == "connecting":
        return Content.styled("◌ connecting…", "$text-warning"), why
    if server.link == "busy":  # the agent has no room now; the connection tries again
        return Content.styled("◌ busy, trying again…", "$text-warning"), why
    if server.link == "auth_failed":
        return Content.styled("✕ auth failed", "bold $text-error"), why
    words = "✕ offline"
    if server.link_since is not None:
        ago = max(now - server.link_since, 0.0)
        words += f" since {clock_time(server.link_since)} ({ago:.0f} s ago)"
    detail = Content.styled(as_of(server), "bold $text-muted")
    if server.link_detail:
        detail += Content.styled(f" · {server.link_detail}", "$text-muted")
    return Content.styled(words, "bold $text-error"), detail


CLOCK_SKEW_SHOWN = 1.0
"""Seconds of clock offset from which the header calls it a skew: the series are aligned on
this client's clock anyway, but a server whose clock is that far off wants fixing."""


def link_quality(server: ServerView) -> Content:
    rtt = f"{server.rtt * 1e3:.1f} ms" if server.rtt is not None else "–"
    parts: list[str | tuple[str, str]] = [("rtt ", "$text-muted"), rtt]
    offset = server.offset
    if offset is not None and abs(offset) >= CLOCK_SKEW_SHOWN:
        parts.append((f"  clock {offset:+.1f} s", "bold $text-warning"))
    else:
        parts += [
            ("  offset ", "$text-muted"),
            f"{offset * 1e3:+.1f} ms" if offset is not None else "–",
        ]
    if server.dropped:
        parts.append((f"  dropped {server.dropped}", "bold $text-warning"))
    return Content.assemble(*parts)


class ServerHeader(FleetPanel):
    """Hostname, GPUs, link state, RTT and clock offset, in HEADER_ROWS rows whatever there is
    to say (so the rows under it line up across servers); refreshed every tick while not
    live, because 'offline since … (Ns ago)' moves on even when no frame arrives."""

    DEFAULT_CSS = f"""
    ServerHeader {{
        height: {HEADER_ROWS + 1};
        background: $boost;
        padding: 0 1;
        border-bottom: solid $primary-muted;
        &:hover {{
            background: $boost-lighten-1;
        }}
        &.-warning {{
            border-bottom: heavy $warning;
        }}
        &.-critical {{
            border-bottom: heavy $error;
            background: $error 15%;
        }}
    }}
    """

    @dataclass
    class Selected(Message):
        """The header was clicked: show this server in detail."""

        server: ServerView

    def on_click(self) -> None:
        self.post_message(self.Selected(self.server))

    def lines(self, width: int) -> list[Content]:
        server = self.server
        name = Content.styled(server.name, "bold $text-accent")
        if server.source not in (server.name, "local"):
            name += Content.styled(f"  {server.source}", "$text-muted")
        state, detail = link_state(server, self.view.timebase)
        now = self.view.timebase.now(server.source)
        worst = worst_of(open_events(server, now))
        for severity in ("warning", "critical"):
            self.set_class(worst == severity, f"-{severity}")
        # Its worst open event, or someone else's work on its GPUs: in place of the detail
        # when there is none, and in any case when it is critical.
        flag = server_flag(server, now) if worst == "critical" or not detail.plain else None
        if server.inventory is None and server.link in ("offline", "auth_failed", "busy"):
            # Never welcomed: nothing to say of its GPUs, and the why gets the two lines.
            return [name, state, *two_lines(detail, width)]
        return [name, gpu_summary(server.inventory), state, flag or detail]


def two_lines(words: Content, width: int) -> list[Content]:
    """`words` wrapped to `width` in two lines at most (the second cut with an ellipsis)."""
    lines = textwrap.wrap(words.plain, max(width, 8)) or [""]
    if len(lines) > 2:
        rest = " ".join(lines[1:])
        lines = [lines[0], rest[: max(width, 8) - 1] + "…"]
    style = words.spans[0].style if words.spans else ""
    return [Content.styled(line, style) for line in lines]
