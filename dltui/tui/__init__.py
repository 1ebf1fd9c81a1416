"""The terminal UI (Textual): the only part of dltui that imports Textual or Rich."""

from dltui.tui.app import DltuiApp, create_app

__all__ = ["DltuiApp", "create_app"]
