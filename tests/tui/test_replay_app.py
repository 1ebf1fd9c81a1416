"""The replay TUI driven by Pilot: keys move the shown time as a user expects."""

from __future__ import annotations

import subprocess

from dltui.tui.replay_app import create_replay_app
from dltui.tui.screens.jump import JumpScreen
from tests.conftest import FIXTURES, ROOT, dltui_command
from tests.tui.pilot import screen_text, wait_for_text, wait_until


async def test_pause_seek_speed_and_next_case():
    app = create_replay_app([FIXTURES / "h200x2-kernels.dlrec", FIXTURES / "cpu-kernels.dlrec"])
    replay = app.replay
    async with app.run_test(size=(130, 40)) as pilot:
        await wait_for_text(pilot, r"▶ 1× +00:0\d / 02:\d\d")  # the CPU box's is the longer
        text = screen_text(app)
        assert "h200x2-kernels/127.0.0.1:7070" in text and "cpu-kernels/127.0.0.1:7070" in text
        await pilot.press("space")
        paused_at = replay.position
        await wait_for_text(pilot, "⏸")
        await pilot.pause(0.3)
        assert replay.position == paused_at  # paused: the time stands still

        await pilot.press("right_square_bracket")
        assert replay.position == min(paused_at + 10, replay.length)
        await pilot.press("left_square_bracket")
        assert replay.position == max(min(paused_at + 10, replay.length) - 10, 0)

        await pilot.press("plus", "plus")
        assert replay.speed == 4.0
        await wait_for_text(pilot, "⏸ 4×")
        await pilot.press("0")
        assert replay.position == 0
        await pilot.press("n")  # the first benchmark case
        await wait_for_text(pilot, r"job \w+ · running")
        await pilot.press("space")
        start = replay.position
        await wait_until(pilot, lambda: replay.position > start + 1.0)  # 4× real time

        await pilot.press("9")
        assert replay.position >= replay.length * 0.9  # and on from there: it is playing
        await wait_until(pilot, lambda: not replay.playing)  # it plays to the end and stops
        await wait_for_text(pilot, r"job \w+ · done")


async def test_jump_to_a_typed_time():
    app = create_replay_app([FIXTURES / "h200x2-kernels.dlrec"])
    replay = app.replay
    async with app.run_test(size=(130, 40)) as pilot:
        await pilot.press("space")
        await wait_for_text(pilot, "⏸")
        await pilot.press("g")
        await wait_until(pilot, lambda: isinstance(app.screen, JumpScreen))
        await pilot.press(*"soon", "enter")
        await wait_for_text(pilot, "is not a time")  # a clear word, and the screen stays
        assert isinstance(app.screen, JumpScreen)
        await pilot.press(*["backspace"] * 4, *"0:07", "enter")
        await wait_until(pilot, lambda: not isinstance(app.screen, JumpScreen))
        assert replay.position == 7.0
        await wait_for_text(pilot, r"⏸ 1×  00:07 / 00:21")
        await pilot.press("g", *"50%", "enter")
        await wait_until(pilot, lambda: replay.position == replay.length / 2)
        await wait_for_text(pilot, r"⏸ 1×  00:10 / 00:21")
        await pilot.press("g", *"3", "escape")  # cancelled: the time stays
        await wait_until(pilot, lambda: not isinstance(app.screen, JumpScreen))
        assert replay.position == replay.length / 2


def test_replay_refuses_a_file_that_is_not_a_recording(tmp_path):
    bogus = tmp_path / "notes.dlrec"
    bogus.write_text("not a recording")
    result = subprocess.run(dltui_command("replay", str(bogus)), capture_output=True, text=True,
                            cwd=ROOT, timeout=60)  # fmt: skip
    assert result.returncode == 2 and "not a dltui recording" in result.stderr


async def test_the_case_under_way_is_named_whole_where_the_bar_has_room():
    """It was cut at 40 characters at any width, without a mark that it was cut."""
    models = ROOT / "docs" / "results" / "models-h200-defaults.dlrec"
    for width, shown in ((200, r"models-h200-defaults/local: resnet50 torch on 1 GPU"),
                         (80, r"models-h200-defaults/local…")):  # fmt: skip
        app = create_replay_app([models])
        async with app.run_test(size=(width, 30)) as pilot:
            await pilot.press("space", "n")
            await wait_for_text(pilot, shown)


async def test_help_opens_from_any_screen_and_a_command_a_replay_cannot_run_says_why():
    """'? this help' did nothing outside the main screen; ':bench quick' and ':record', which
    the command line itself suggests, did nothing in a replay without a word."""
    from dltui.tui.screens.help import HelpScreen
    from dltui.tui.screens.results import ResultsScreen

    app = create_replay_app([FIXTURES / "cpu-kernels.dlrec"])
    told: list[str] = []
    notify = app.notify
    app.notify = lambda message, **more: (told.append(message), notify(message, **more))[1]  # type: ignore[method-assign]
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for_text(pilot, "cpu-kernels")
        await pilot.press("v")
        await wait_until(pilot, lambda: isinstance(app.screen, ResultsScreen))
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen))
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, ResultsScreen))
        await pilot.press("escape")
        await pilot.press("colon", *"bench quick", "enter")
        await wait_until(
            pilot, lambda: any(m.startswith(":bench: benchmarks run on") for m in told)
        )
        await pilot.press("colon", *"record", "enter")
        await wait_until(pilot, lambda: told[-1:] == [":record: a replay is already a recording"])
