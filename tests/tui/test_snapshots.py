"""Snapshots of the main screens, drawn from the real recordings at fixed replay positions
(screenshots/scenes.py, the same scenes as the README's screenshots).

A change to what a screen shows fails here with a side-by-side diff; after a change made on
purpose, `pytest tests/tui/test_snapshots.py --snapshot-update` records the new look.
"""

from __future__ import annotations

import pytest

from screenshots.scenes import SCENES, Scene


@pytest.mark.parametrize("scene", SCENES, ids=[scene.name for scene in SCENES])
def test_screen(scene: Scene, snap_compare) -> None:
    assert snap_compare(scene.app(), terminal_size=scene.size, run_before=scene.stage)
