"""Snapshots of the main screens, drawn from the real recordings at fixed replay positions
(screenshots/scenes.py, the same scenes as the README's screenshots).

A change to what a screen shows fails here with a side-by-side diff; after a change made on
purpose, `pytest tests/tui/test_snapshots.py --snapshot-update` records the new look.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from screenshots.scenes import SCENES, Scene


@pytest.mark.parametrize("scene", SCENES, ids=[scene.name for scene in SCENES])
def test_screen(scene: Scene, snap_compare) -> None:
    assert snap_compare(scene.app(), terminal_size=scene.size, run_before=scene.stage)


def test_the_readme_shows_every_readme_scene_and_only_shots_that_exist() -> None:
    root = Path(__file__).resolve().parents[2]
    shown = re.findall(r"!\[[^\]]*\]\((screenshots/[^)]+)\)", (root / "README.md").read_text())
    assert [path for path in shown if not (root / path).is_file()] == []
    readme_scenes = {f"screenshots/{scene.name}.png" for scene in SCENES if scene.readme}
    assert readme_scenes - set(shown) == set()
