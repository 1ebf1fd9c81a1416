"""A table that never cuts a figure at its right edge, where a cut one reads as another figure
('0.4' of '0.41×', '×20' of '×204'): its first columns (what each row is) stay, and of the
others it shows as many as fit whole. Each column comes in forms, from the richest to the
barest, and the table takes the richest that costs no column its place: detail goes before a
server does. ← → at the last or first column shown (anywhere, where the cursor is a whole row)
bring in the next one, and the headings at the edges say how many are off to each side."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from rich.cells import cell_len
from rich.text import Text
from textual.coordinate import Coordinate
from textual.widgets import DataTable

FIXED_AT_LEAST = 12
"""The first columns (what each row is) are cut, with an ellipsis, to no less than this where
even one other column would not fit beside them whole."""


@dataclass(frozen=True, slots=True)
class Column:
    key: str
    heading: str
    forms: Sequence[Sequence[Text]]
    """Its cells, one a row, in each of its forms: the richest first."""

    def width(self, form: int, heading: str) -> int:
        """Cells its widest entry takes in a form (the barest it has, past its last)."""
        cells = self.forms[min(form, len(self.forms) - 1)]
        return max([cell_len(heading), *(cell.cell_len for cell in cells)])


@dataclass(frozen=True, slots=True)
class Window:
    """Which columns show, whole, beside the first, and in which form."""

    form: int
    first: int
    count: int


def left_mark(first: int) -> str:
    """What the heading at the left edge begins with: how many columns are off that side."""
    return f"← {first} more  " if first > 0 else ""


def edge_headings(columns: Sequence[Column], first: int, count: int) -> list[str]:
    """The headings of columns[first : first + count], those at the edges saying how many
    columns are off that side."""
    headings = [column.heading for column in columns[first : first + count]]
    right = len(columns) - first - count
    if headings:
        headings[0] = left_mark(first) + headings[0]
    if headings and right > 0:
        headings[-1] = f"{headings[-1]}  {right} more →"
    return headings


def span(columns: Sequence[Column], window: Window, padding: int) -> int:
    """Cells the window's columns take, each with its padding on both sides."""
    shown = columns[window.first : window.first + window.count]
    headings = edge_headings(columns, window.first, window.count)
    return sum(c.width(window.form, h) + 2 * padding for c, h in zip(shown, headings, strict=True))


def fit(columns: Sequence[Column], room: int, first: int, padding: int) -> Window:
    """From `first` on, as many columns as fit `room` in their barest form (one at the least),
    in the richest form that still holds that many."""
    barest = max((len(column.forms) for column in columns), default=1) - 1

    def fitting(form: int) -> int:
        # Every count tried: the last column needs no heading counting those after it, so all
        # may fit where all but one do not.
        counts = range(1, len(columns) - first + 1)
        whole = [n for n in counts if span(columns, Window(form, first, n), padding) <= room]
        return max(whole, default=0)

    most = fitting(barest)
    if most == 0:  # not even one: the first column gives way (WholeColumnTable._lay_out)
        return Window(barest, first, min(1, len(columns) - first))
    return Window(next(f for f in range(barest + 1) if fitting(f) >= most), first, most)


def given_way(widths: Sequence[int], over: int) -> list[int]:
    """The first columns' widths less `over` cells in all, the last of them giving way first,
    none cut below FIXED_AT_LEAST."""
    cut = list(widths)
    for index in reversed(range(len(cut))):
        taken = max(0, min(over, cut[index] - FIXED_AT_LEAST))
        cut[index] -= taken
        over -= taken
    return cut


class WholeColumnTable(DataTable[Text]):
    """A DataTable filled through `show`: first columns that stay, and a window of the
    others."""

    DEFAULT_CSS = """
    WholeColumnTable {
        scrollbar-gutter: stable;  /* a vertical scrollbar takes no room the columns counted */
    }
    """

    def __init__(
        self,
        *,
        id: str | None = None,
        zebra_stripes: bool = False,
        cursor_type: Literal["cell", "row"] = "cell",
    ) -> None:
        super().__init__(id=id, zebra_stripes=zebra_stripes, cursor_type=cursor_type)
        self._fixed: Sequence[Column] = ()
        self._columns: Sequence[Column] = ()
        self._window = Window(0, 0, 0)
        self._laid_out: int | None = None
        """The room it was laid out for."""

    @property
    def cursor_key(self) -> str | None:
        """The key of the cursor's column, a first column's or one of the others'."""
        if not self.ordered_columns:
            return None
        column = self.ordered_columns[min(self.cursor_column, len(self.ordered_columns) - 1)]
        return str(column.key.value)

    def show(self, fixed: Sequence[Column], columns: Sequence[Column]) -> None:
        """Draw these columns, `fixed` first, the cursor kept on its row and column where they
        are still."""
        self._fixed, self._columns = fixed, columns
        self._lay_out(self.cursor_key)

    def on_resize(self) -> None:
        if self._laid_out is not None and self._laid_out != self._room():
            self._lay_out(self.cursor_key)

    def action_cursor_right(self) -> None:
        beyond = self._window.first + self._window.count
        at_edge = self.cursor_column == len(self._fixed) + self._window.count - 1
        if (at_edge or self.cursor_type == "row") and beyond < len(self._columns):
            self._lay_out(self._columns[beyond].key)
        else:
            super().action_cursor_right()

    def action_cursor_left(self) -> None:
        at_edge = self.cursor_column == len(self._fixed)
        if (at_edge or self.cursor_type == "row") and self._window.first > 0:
            self._lay_out(self._columns[self._window.first - 1].key)
        else:
            super().action_cursor_left()

    def _room(self) -> int:
        return self.scrollable_content_region.width

    def _lay_out(self, cursor_key: str | None) -> None:
        """Fit the window to the room, the cursor's column in it, and draw it."""
        room, padding = self._room(), self.cell_padding
        window = Window(0, 0, 0)  # no room yet: not laid out, and its resize lays it out
        labels = [column.width(0, column.heading) for column in self._fixed]
        if room > 0:
            keys = [column.key for column in self._columns]
            rest = room - sum(labels) - 2 * padding * len(labels)
            first = min(self._window.first, max(len(keys) - 1, 0))
            if cursor_key in keys:  # from the cursor's column on where it is left of the last
                first = min(first, keys.index(cursor_key))
            window = fit(self._columns, rest, first, padding)
            while cursor_key in keys and keys.index(cursor_key) >= window.first + window.count:
                window = fit(self._columns, rest, window.first + 1, padding)
            # The names give way, cut with an ellipsis, only where one column would not fit.
            labels = given_way(labels, span(self._columns, window, padding) - rest)
        self._window, self._laid_out = window, room
        self._draw(labels, cursor_key)

    def _draw(self, labels: Sequence[int], cursor_key: str | None) -> None:
        window = self._window
        shown = self._columns[window.first : window.first + window.count]
        headings = edge_headings(self._columns, window.first, window.count)
        row, column = self.cursor_row, self.cursor_column
        self.clear(columns=True)
        # Widths given, not measured: a DataTable measures new cells only when it next idles,
        # and in a busy suite run that had not come ten seconds later.
        for fixed, width in zip(self._fixed, labels, strict=True):
            self.add_column(Text(fixed.heading), key=fixed.key, width=width)
        widths = [c.width(window.form, h) for c, h in zip(shown, headings, strict=True)]
        for shown_column, heading, width in zip(shown, headings, widths, strict=True):
            self.add_column(Text(heading), key=shown_column.key, width=width)
        # The first one's cells under its own heading, not under the count of those off to the
        # left, as far as its width allows.
        indent = 0
        if shown:
            widest = shown[0].width(window.form, "")
            indent = min(cell_len(left_mark(window.first)), widths[0] - widest)
        names = zip(*(fixed.forms[0] for fixed in self._fixed), strict=True)
        for index, row_names in enumerate(names):
            cells = [c.forms[min(window.form, len(c.forms) - 1)][index] for c in shown]
            if indent:
                cells[0] = Text(" " * indent) + cells[0]
            self.add_row(*map(_cut, row_names, labels), *cells)
        shown_keys = [c.key for c in shown]
        if cursor_key in shown_keys:
            column = len(self._fixed) + shown_keys.index(cursor_key)
        if self.row_count:
            self.cursor_coordinate = self.validate_cursor_coordinate(Coordinate(row, column))


def _cut(label: Text, width: int) -> Text:
    """The label in `width` cells, its end an ellipsis where it is longer."""
    if label.cell_len <= width:
        return label
    cut = label.copy()
    cut.truncate(width, overflow="ellipsis")
    return cut
