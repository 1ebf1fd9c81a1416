"""The top of a server's column: which machine, what GPUs, and whether we can hear it."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass

from textual.content import Content
from textual.message import Message

from dltui.fleet.state import ServerView
from dltui.protocol.messages import Inventory
from dltui.tui.widgets.panel import FleetPanel
from dltui.tui.widgets.server_flags import server_flags


def gpu_summary(inventory: Inventory | None) -> list[Content]:
    """'8× NVIDIA H200', or why there is no GPU: the first thing a buyer compares."""
    if inventory is None:
        return [Content.styled("waiting for inventory…", "$text-muted")]
    if not inventory.gpus:
        lines = [Content.styled("no GPU", "bold $text-warning")]
        if inventory.nvml_error:
            lines.append(Content.styled(inventory.nvml_error, "$text-muted"))
        return lines
    counts = Counter(gpu.name for gpu in inventory.gpus)
    return [Content.styled(", ".join(f"{n}× {name}" for name, n in counts.items()), "bold")]


def link_state(server: ServerView, now: float) -> list[Content]:
    """The connection state in words, and why when it is down; offline says since when, so a
    flapping link shows."""
    if server.link == "live":
        return [Content.styled("● live", "bold $text-success")]
    if server.link == "connecting":
        return [Content.styled("◌ connecting…", "$text-warning")]
    if server.link == "busy":  # the agent has no room now; the connection tries again
        lines = [Content.styled("◌ busy, trying again…", "$text-warning")]
        if server.link_detail:
            lines.append(Content.styled(server.link_detail, "$text-muted"))
        return lines
    if server.link == "auth_failed":
        words = "✕ auth failed"
    else:
        words = "✕ offline"
        if server.link_since is not None:
            since = time.strftime("%H:%M:%S", time.localtime(server.link_since))
            words += f" since {since} ({now - server.link_since:.0f}s ago)"
    lines = [Content.styled(words, "bold $text-error")]
    if server.link_detail:
        lines.append(Content.styled(server.link_detail, "$text-muted"))
    return lines


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
    """Hostname, GPUs, link state, RTT and clock offset; refreshed every tick while not live,
    because 'offline since … (Ns ago)' moves on even when no frame arrives."""

    DEFAULT_CSS = """
    ServerHeader {
        background: $boost;
        padding: 0 1;
        border-bottom: solid $primary-muted;
        &:hover {
            background: $boost-lighten-1;
        }
    }
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
        lines = [name, *gpu_summary(server.inventory), *link_state(server, time.time())]
        lines.append(link_quality(server))
        lines += server_flags(server)
        if server.last_error:
            lines.append(Content.styled(server.last_error, "$text-error"))
        # Wrapped, not cut: a long hostname or an error's detail is worth its extra line.
        return [part for line in lines for part in line.wrap(width)]
