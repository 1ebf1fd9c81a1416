"""Textual's footer, its keys in the order the app wants them most, less those its width
cannot hold: a key is dropped whole, never cut ("w Wind▏"), the least wanted first."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey  # Textual exports the footer, not its keys


def action_name(action: str) -> str:
    """ "app.speed(-1)" -> "speed": a binding's action without its namespace or arguments."""
    return action.partition("(")[0].removeprefix("app.")


class FittedFooter(Footer):
    """A screen's own keys come first (over another screen, what it does is what it is for),
    then those whose actions are in the app's `FOOTER_FIRST` (most wanted first; the command
    palette's is "command_palette"), in that order, then the others in theirs."""

    def compose(self) -> ComposeResult:
        first: tuple[str, ...] = getattr(self.app, "FOOTER_FIRST", ())
        own = {active.binding.action for active in self.screen.active_bindings.values()
               if not isinstance(active.node, App)}  # fmt: skip

        def rank(indexed: tuple[int, object]) -> tuple[bool, int, int]:
            index, widget = indexed
            action = widget.action if isinstance(widget, FooterKey) else ""
            name = action_name(action)
            return (action not in own, first.index(name) if name in first else len(first), index)

        widgets = list(super().compose())
        yield from (widget for _, widget in sorted(enumerate(widgets), key=rank))

    async def recompose(self) -> None:
        await super().recompose()
        self.call_after_refresh(self.fit)

    def on_resize(self) -> None:
        self.fit()

    def fit(self) -> None:
        """Show the keys that fit, in order; one too wide for what is left is dropped, and a
        shorter one after it may still fit."""
        room = self.size.width
        for key in self.query_children(FooterKey):
            needed = width(key)
            key.display = needed <= room
            room -= needed if key.display else 0


def width(key: FooterKey) -> int:
    """Cells the key takes: its padding, border and margins included (the command palette's
    key, docked right, has a border and padding the others have not)."""
    styles = key.styles
    return key.render().cell_len + styles.gutter.width + styles.margin.width
