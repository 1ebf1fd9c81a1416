"""Where a replay is: playing or paused, its speed, the time, a bar, and the benchmark case."""

from __future__ import annotations

from textual.content import Content
from textual.widget import Widget

from dltui.recording.replay import ReplaySet


def clock(seconds: float) -> str:
    minutes, rest = divmod(int(seconds), 60)
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
        head = f"{state} {replay.speed:g}×  {clock(replay.position)} / {clock(replay.length)}  "
        phase = replay.phase() or ""
        width = max(self.content_size.width - len(head) - min(len(phase), 40) - 2, 10)
        filled = round(width * replay.position / replay.length) if replay.length else width
        return Content.assemble(
            (head, "bold"),
            ("█" * filled, "$accent"),
            ("·" * (width - filled), "$text-muted"),
            "  ",
            (phase[:40], "$text-muted"),
        )
