"""Where a replay is: playing or paused, its speed, the time, a bar, and the benchmark case.

The bar marks where benchmark cases begin, so `n` (the next case) has something to aim at.
"""

from __future__ import annotations

from textual.content import Content
from textual.widget import Widget

from dltui.foreign_text import shown
from dltui.recording.replay import ReplaySet


def clock(seconds: float, hours: bool = False) -> str:
    """mm:ss, or h:mm:ss for recordings of an hour or more."""
    minutes, rest = divmod(int(seconds), 60)
    if hours:
        return f"{minutes // 60}:{minutes % 60:02d}:{rest:02d}"
    return f"{minutes:02d}:{rest:02d}"


class PositionBar(Widget):
    DEFAULT_CSS = """
    PositionBar {
        height: 1;
        background: $panel;
        padding: 0 1;
    }
    """

    def __init__(self, replay: ReplaySet) -> None:
        super().__init__()
        self.replay = replay

    def render(self) -> Content:
        replay = self.replay
        state = "▶" if replay.playing else "⏸"
        hours = replay.length >= 3600
        when = f"{clock(replay.position, hours)} / {clock(replay.length, hours)}"
        head = f"{state} {replay.speed:g}×  {when}  "
        free = self.content_size.width - len(head) - 2
        phase = shown(replay.phase() or "", max(free // 2, 12))  # the bar keeps half, or more
        width = max(free - len(phase), 10)
        filled = round(width * replay.position / replay.length) if replay.length else width
        cases = {min(int(width * start / replay.length), width - 1)
                 for start in replay.case_starts()} if replay.length else set()  # fmt: skip
        runs: list[tuple[str, str]] = []
        for cell in range(width):
            mark, style = (("╹", "$text") if cell in cases else ("█", "$accent")
                           if cell < filled else ("·", "$text-muted"))  # fmt: skip
            if runs and runs[-1][1] == style:
                runs[-1] = (runs[-1][0] + mark, style)
            else:
                runs.append((mark, style))
        return Content.assemble((head, "bold"), *runs, "  ", (phase, "$text-muted"))
