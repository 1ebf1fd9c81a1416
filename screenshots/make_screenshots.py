"""Regenerate the README's screenshots from the real recordings in tests/fixtures.

Each shot is a README scene of screenshots/scenes.py (the replay app paused at a chosen moment,
or a made-up fleet whose clock stands still), saved
as SVG by Textual and as PNG beside it by headless Chromium (Debian's chromium), which lays the
SVG's text out as a browser would; without Chromium, only the SVGs.

    make screenshots
"""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from screenshots.scenes import README_SCENES, Scene

HERE = Path(__file__).resolve().parent


async def shoot(scene: Scene) -> Path:
    app = scene.app()
    async with app.run_test(size=scene.size) as pilot:
        await scene.stage(pilot)
        path = HERE / f"{scene.name}.svg"
        app.save_screenshot(path.name, str(HERE))
    return path


def to_png(chromium: str, svg: Path) -> Path:
    """The SVG as Chromium draws it, at its own size."""
    width, height = re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg.read_text()).groups()
    png = svg.with_suffix(".png")
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             f"--user-data-dir={profile}", f"--window-size={round(float(width))},"
             f"{round(float(height))}", f"--screenshot={png}", svg.as_uri()],
            check=True, capture_output=True,
        )  # fmt: skip
    return png


async def main() -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    for scene in README_SCENES:
        shot = await shoot(scene)
        if chromium:
            shot = to_png(chromium, shot)
        print(shot.relative_to(HERE.parent))


if __name__ == "__main__":
    asyncio.run(main())
