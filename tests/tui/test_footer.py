"""The footer keeps the keys its width holds, each whole: none runs under the command
palette's key, docked at its right end."""

from __future__ import annotations

import pytest
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from dltui.tui.replay_app import create_replay_app
from tests.conftest import FIXTURES
from tests.tui.pilot import wait_for_text, wait_until


def keys_clear_of_the_palette(footer: Footer) -> bool:
    keys = [key for key in footer.query(FooterKey) if key.display and key.region.width]
    palette = [key for key in keys if key.has_class("-command-palette")]
    others = [key for key in keys if not key.has_class("-command-palette")]
    end = palette[0].region.x if palette else footer.region.right
    return bool(others) and all(key.region.right <= end for key in others)


@pytest.mark.parametrize("width", [80, 90, 110, 150])
async def test_no_key_runs_under_the_palettes(width: int) -> None:
    """At 80 columns the what-if screen read 'q Qu▏^p palette', the main one at 150
    'o Overla▏': the palette key's border and padding were not counted."""
    app = create_replay_app([FIXTURES / "cpu-whatif.dlrec"])
    async with app.run_test(size=(width, 30)) as pilot:
        await wait_for_text(pilot, "cpu-whatif")
        for keys in ((), ("v",), ("w",)):
            await pilot.press(*keys)
            footer = app.screen.query_one(Footer)
            await wait_until(pilot, lambda footer=footer: keys_clear_of_the_palette(footer))
