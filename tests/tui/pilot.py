"""Reading a Textual app as a person sees it, for Pilot tests: the screen as text, and waits
that let the app run until what is awaited shows."""

from __future__ import annotations

import html
import re
import time
from collections.abc import Callable

from textual.pilot import Pilot

from dltui.tui import DltuiApp

LIVE_CPU = r"cpu +100%┤[^\n]*\n[│ ]*\d+%"
"""A host panel whose CPU chart has a value: samples arrive."""
SVG_TEXT = re.compile(
    r'<text[^>]*?x="([\d.]+)"[^>]*?textLength="([\d.]+)"[^>]*?line-(\d+)\)"[^>]*>(.*?)</text>'
)


def screen_text(app: DltuiApp) -> str:
    """The screen as plain lines, rebuilt from the SVG screenshot's positioned text runs."""
    lines: dict[int, list[str]] = {}
    for x, length, line, escaped in SVG_TEXT.findall(app.export_screenshot()):
        text = html.unescape(escaped).replace("\xa0", " ")
        column = round(float(x) / (float(length) / len(text)))
        row = lines.setdefault(int(line), [])
        row.extend(" " * (column + len(text) - len(row)))
        row[column : column + len(text)] = text
    rows = range(max(app.size.height, max(lines, default=-1) + 1))
    return "\n".join("".join(lines.get(y, [])).rstrip() for y in rows)


async def wait_until(pilot: Pilot, condition: Callable[[], bool], timeout: float = 10.0) -> None:
    """Poll, letting the app run between tries; fail with the screen when time runs out."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out; screen:\n{screen_text(pilot.app)}"
        await pilot.pause(0.05)


async def wait_for_text(pilot: Pilot, pattern: str, timeout: float = 10.0) -> str:
    await wait_until(pilot, lambda: re.search(pattern, screen_text(pilot.app)) is not None, timeout)
    return screen_text(pilot.app)


async def replayed_to_the_end(pilot: Pilot) -> None:
    """A replay app paused at its recordings' end, its jobs drawn as done."""
    app = pilot.app
    app.replay.playing = False
    app.replay.seek(app.replay.length)
    await wait_for_text(pilot, r"job \w+ · done")
