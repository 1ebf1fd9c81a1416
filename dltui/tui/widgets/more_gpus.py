"""The line under a column's GPU panels when they do not all fit: "▲ 3 above · 4 more GPUs ↓",
with the keys that scroll them (every column together)."""

from __future__ import annotations

from textual.content import Content
from textual.widget import Widget

from dltui.formatting import counted


class MoreGpus(Widget):
    DEFAULT_CSS = """
    MoreGpus {
        height: 1;
        padding: 0 1;
        background: $boost;
        color: $text-muted;
    }
    """

    def __init__(self) -> None:
        super().__init__()
        self.counts = (0, 0)

    def show(self, above: int, below: int) -> None:
        if (above, below) != self.counts:
            self.counts = (above, below)
            self.refresh()

    def render(self) -> Content:
        above, below = self.counts
        if not above and not below:
            return Content("")
        parts: list[str | tuple[str, str]] = []
        if above:
            parts.append((f"▲ {above} above", "bold"))
        if below:
            if parts:
                parts.append(" · ")
            parts.append((f"{counted(below, 'more GPU')} ↓", "bold $text-accent"))
        parts.append(("  ↑↓ pgup pgdn", "$text-muted"))
        return Content.assemble(*parts)
