"""Regenerate the README's screenshots from the real recordings in tests/fixtures.

Each shot is the replay app at a chosen moment, saved as SVG by Textual and, where
`rsvg-convert` is installed (Debian's librsvg2-bin), as PNG beside it.

    make screenshots
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path

from dltui.recording.replay import ReplaySet
from dltui.tui.replay_app import create_replay_app

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "tests" / "fixtures"
H200 = FIXTURES / "h200x2-kernels.dlrec"
CPU = FIXTURES / "cpu-kernels.dlrec"


def gemm_peak(replay: ReplaySet) -> float:
    """The moment of the largest GEMM: the GPU at full tilt."""
    while replay.next_phase():
        phase = replay.phase() or ""
        if "8448x48000x2816" in phase:
            return replay.position + 0.5
    return replay.length / 2


def allreduce_peak(replay: ReplaySet) -> float:
    """The last all-reduce size: NVLink carrying the most."""
    last = replay.length / 2
    replay.seek(0)
    while replay.next_phase():
        if "64500000" in (replay.phase() or ""):
            last = replay.position + 0.4
    return last


async def shoot(name: str, files: list[Path], size: tuple[int, int], moment, keys=()) -> Path:
    app = create_replay_app(files)
    async with app.run_test(size=size) as pilot:
        app.replay.playing = False
        app.replay.seek(moment(app.replay))
        app.replay.playing = False
        await pilot.pause(0.5)  # let the redraw timer run
        for key in keys:
            await pilot.press(key)
        await pilot.pause(0.3)
        path = HERE / f"{name}.svg"
        app.save_screenshot(path.name, str(HERE))
    return path


async def main() -> None:
    shots = [
        await shoot("gemm-h200", [H200], (120, 45), gemm_peak),
        await shoot("allreduce-h200", [H200], (120, 45), allreduce_peak),
        await shoot("side-by-side", [H200, CPU], (160, 45), lambda r: r.length),
        await shoot("help", [H200], (120, 45), lambda r: r.length, keys=("question_mark",)),
    ]
    converter = shutil.which("rsvg-convert")
    for svg in shots:
        if converter:
            subprocess.run([converter, "-w", "1400", str(svg), "-o", str(svg.with_suffix(".png"))],
                           check=True)  # fmt: skip
        print(svg.with_suffix(".png" if converter else ".svg").relative_to(HERE.parent))


if __name__ == "__main__":
    asyncio.run(main())
