"""What a part of the app may count on: the attributes `DltuiApp` sets, and Textual's `App`.

`app.py` composes the app from parts (`command_and_filter.py`, `benchmark_runs.py`,
`recording_toggle.py`), each a mixin. At run time a part is a plain class, so Textual sees one
app: its bindings, CSS and reactives are collected from the app's classes as before, and a
part's handlers (`on_key`, `watch_name_filter`) are found along the app's MRO like its own. To
mypy a part is an `App` with the attributes below, so each is checked against what it uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual.app import App

    from dltui.client.session import ClientSession
    from dltui.fleet.state import Fleet
    from dltui.tui.view import MonitorView
    from dltui.tui.widgets.server_strip import ServerStrip

    _Base = App[None]
else:
    _Base = object


class AppPart(_Base):
    """A mixin of `DltuiApp`: these attributes are set in its constructor."""

    fleet: Fleet
    session: ClientSession
    view: MonitorView
    strip: ServerStrip
    _summary: str
    """The title line's first part: servers and their states (a replay's own words)."""

    if TYPE_CHECKING:

        def _fleet_summary(self) -> str: ...

        def why_not(self, action: str) -> str: ...
