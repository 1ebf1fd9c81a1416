"""The TUI driven by Pilot: real frames in, rendered text out.

Text is read from the exported SVG screenshot (a public API) and rebuilt into screen lines, so
the assertions see what a user would see, clipping and all.
"""

from __future__ import annotations

import re
import socket
import time

import pytest
from textual.containers import VerticalScroll

from dltui.client.target import parse_target
from dltui.protocol.bench_results import KernelResult
from dltui.protocol.inventory import Inventory
from dltui.protocol.messages import (
    ConnectionState,
    JobEnd,
    JobProgress,
    JobResult,
    Pong,
    Sample,
    Welcome,
)
from dltui.protocol.samples import HostSample
from dltui.tui import create_app
from dltui.tui.screens.help import HelpScreen
from dltui.tui.widgets.gpu_table import GpuTable
from dltui.tui.widgets.server_column import ServerColumn
from dltui.tui.widgets.server_strip import ServerStrip
from tests.fakes.messages import gpu_box_messages
from tests.tui.pilot import LIVE_CPU, screen_text, wait_for_text, wait_until

GIB = 2**30


async def test_real_local_agent_shows_this_host_live() -> None:
    app = create_app([parse_target("local")])
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for_text(pilot, LIVE_CPU)
        text = await wait_for_text(pilot, r"● live  rtt")
        assert socket.gethostname()[:30] in text
        await wait_until(pilot, lambda: "1 server · 1 live" in app.sub_title)


async def test_fake_gpu_fleet_shows_gpus_lost_gpu_and_offline_link() -> None:
    app = create_app([])
    now = time.time()
    async with app.run_test(size=(120, 40)) as pilot:
        for message in gpu_box_messages(now):
            app.fleet.apply("gpubox:7070", message)
        # 120x40 cannot give two GPUs' ten charts two rows each: a line per GPU (waited for
        # whole: under load a frame can show it half drawn).
        text = await wait_for_text(pilot, r"\n +0 +█+\S* +79%.*↑100 ↓90")
        assert "gpubox" in text and "2× NVIDIA H200" in text
        row = next(line for line in text.splitlines() if re.match(r" +0 ", line))
        for shown in ("70.0", "600/700 W", "61 °C", "93%", "1485", "↑5.0 ↓2.0", "↑100 ↓90"):
            assert shown in row, shown
        assert re.search(r"\n +1 ✕ lost: stopped answering NVML", text)
        assert "offline" not in text and "dropped" not in text

        await pilot.press("c")  # panels, though each chart gets a single row here
        text = await wait_for_text(pilot, r"GPU 0 · NVIDIA H200 · software power cap")
        assert re.search(r"│ power +\S+ +600 W │", text) and "⚠ 1 field unread (d)" in text
        await pilot.press("c")
        await wait_for_text(pilot, r"\n +0 +█+\S* +79%")
        # Where the screen is large enough, panels by themselves: a chart per field, rows
        # high, each on the field's own scale.
        await pilot.resize_terminal(200, 60)
        text = await wait_for_text(pilot, r"GPU 0 · NVIDIA H200 · software power cap")
        assert re.search(r"power +700 W┤", text) and re.search(r"\n│ 600 W +│", text)
        assert re.search(r"nvl tx +450 GB/s┤", text)  # 18 links × 25 GB/s each way
        assert re.search(r"pci tx +63 GB/s┤", text)  # PCIe gen 5 ×16, each way
        assert re.search(r"sm clk +2000 MHz┤", text)  # no maximum reported: 2 GHz
        assert "GPU 1 · NVIDIA H200" in text and "lost" in text
        await pilot.resize_terminal(120, 40)

        app.fleet.apply("gpubox:7070", Pong(1, now, 1.0, dropped=3))
        await wait_for_text(pilot, "dropped 3")

        app.fleet.apply("gpubox:7070", ConnectionState("offline", time.time(), "connection reset"))
        text = await wait_for_text(pilot, r"offline since \d\d:\d\d:\d\d \(\d+ s ago\)")
        assert re.search(r"as of \d\d:\d\d:\d\d · connection reset", text)
        assert re.search(r"\n +0 +█+\S* +79%", text)  # its last values, greyed
        assert app.sub_title == "1 server · 0 live · 1 offline"

        app.fleet.apply("gpubox:7070", ConnectionState("auth_failed", time.time(), "bad secret"))
        text = await wait_for_text(pilot, "✕ auth failed")
        assert "bad secret" in text and "offline" not in text


async def test_benchmark_results_appear_beside_the_server_as_they_arrive() -> None:
    app = create_app([])
    now = time.time()
    result = KernelResult(
        "gemm", "torch", "cuda:0", "bf16", "fwd", "5124x9124x2560 NN", median_s=0.0011,
        tflops=217.4, reference_gpu="V100", reference_tflops=96.6, ratio=2.25,
    )  # fmt: skip
    async with app.run_test(size=(120, 40)) as pilot:
        for message in gpu_box_messages(now):
            app.fleet.apply("gpubox:7070", message)
        text = await wait_for_text(pilot, "gpubox")
        assert "no benchmark run" in text
        app.fleet.apply("gpubox:7070", JobProgress("j1", 3, 10, "gemm 5124x9124x2560 NN bf16"))
        await wait_for_text(pilot, r"job j1 · running")
        # The bar and the case's label may be drawn a frame after the job's line.
        await wait_for_text(pilot, r"█+·+ 3/10")
        await wait_for_text(pilot, "gemm 5124x9124x2560 NN bf16")
        app.fleet.apply("gpubox:7070", JobResult("j1", result))
        text = await wait_for_text(pilot, r"217.4 TFLOP/s 2.25×")
        assert "gemm 5124x9124x2560 NN fwd bf16" in text
        app.fleet.apply("gpubox:7070", JobEnd("j1", "failed", "the worker was killed by SIGKILL"))
        text = await wait_for_text(pilot, r"job j1 · failed · 1 result")
        assert "killed by SIGKILL" in text and "217.4 TFLOP/s" in text


async def test_server_without_gpu_shows_why_and_no_gpu_lines() -> None:
    app = create_app([])
    now = time.time()
    inventory = Inventory("cpubox", "Linux", "EPYC", 8, 32 * GIB, nvml_error="no NVIDIA driver")
    async with app.run_test(size=(120, 40)) as pilot:
        app.fleet.apply("cpubox:7070", Welcome("agent-2", inventory, 10.0, now, 1.0))
        app.fleet.apply("cpubox:7070", ConnectionState("live", now))
        host = HostSample({"cpu": 40.0, "load1": 2.5, "load5": 1.0, "load15": 0.5}, [40.0] * 8)
        app.fleet.apply("cpubox:7070", Sample(1, now, 1.0, host))
        text = await wait_for_text(pilot, r"cpu +100%┤[^\n]*\n│ 40%")
        assert "no GPU · no NVIDIA driver" in text
        assert re.search(r"load 2.50", text)
        assert "GPU 0" not in text and "util" not in text


async def test_small_terminal_renders_hostname_and_scrolls_sideways() -> None:
    app = create_app([])
    now = time.time()
    async with app.run_test(size=(80, 24)) as pilot:
        for message in gpu_box_messages(now):
            app.fleet.apply("gpubox:7070", message)
        app.fleet.add("other:7070")
        text = await wait_for_text(pilot, "gpubox")
        assert "connecting" in text  # the second column fits beside the first
        await wait_until(pilot, lambda: "2 servers · 1 live" in app.sub_title)

        app.fleet.add("third:7070")
        servers = app.query_one(ServerStrip)
        await wait_until(pilot, lambda: servers.max_scroll_x > 0)
        assert "third:7070" not in screen_text(app)
        await pilot.press("right")
        text = await wait_for_text(pilot, "third:7070")
        assert "gpubox" not in text and "other:7070" in text  # a whole column further
        await pilot.press("home")
        await wait_for_text(pilot, "gpubox")


async def test_columns_share_the_width_down_to_forty_cells() -> None:
    app = create_app([])
    async with app.run_test(size=(120, 30)) as pilot:
        app.fleet.add("a:1")
        strip = app.query_one(ServerStrip)
        widths = lambda: [column.outer_size.width for column in strip.columns]  # noqa: E731
        await wait_until(pilot, lambda: widths() == [120])
        app.fleet.add("b:1")
        await wait_until(pilot, lambda: widths() == [60, 60])
        for name in ("c:1", "d:1"):
            app.fleet.add(name)
        await wait_until(pilot, lambda: widths() == [40] * 4 and strip.max_scroll_x == 40)
        await pilot.resize_terminal(160, 30)
        await wait_until(pilot, lambda: widths() == [40] * 4 and strip.max_scroll_x == 0)


async def test_redraws_only_when_the_fleet_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    app = create_app([])
    now = time.time()
    ticks: list[int] = []
    renders: list[int] = []
    sync, lines = ServerColumn.sync, GpuTable.lines

    def counted_sync(column: ServerColumn, version: object) -> None:
        ticks.append(version)
        sync(column, version)

    def counted_lines(table: GpuTable, width: int) -> list:
        renders.append(len(table.server.gpus))
        return lines(table, width)

    monkeypatch.setattr(ServerColumn, "sync", counted_sync)
    monkeypatch.setattr(GpuTable, "lines", counted_lines)
    async with app.run_test(size=(120, 40)) as pilot:
        messages = gpu_box_messages(now)
        for message in messages:
            app.fleet.apply("gpubox:7070", message)
        await wait_for_text(pilot, "79%")
        for _ in range(10):  # the first layouts draw it again; then a quiet fleet draws nothing
            ticks.clear()
            renders.clear()
            await wait_until(pilot, lambda: len(ticks) >= 4)  # a second of quiet fleet
            if not renders:
                break
        assert len(set(ticks)) == 1 and not renders

        app.fleet.apply("gpubox:7070", messages[-1])
        await wait_until(pilot, lambda: len(set(ticks)) == 2 and 2 in renders)


async def test_help_opens_and_closes_and_q_quits() -> None:
    app = create_app([])
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen))
        assert "command palette" in screen_text(app)
        assert "esc or ? close" in screen_text(app)  # how to leave, on its frame
        body = app.screen.query_one(VerticalScroll)
        await pilot.press("G")
        await wait_until(pilot, lambda: body.scroll_y == body.max_scroll_y > 0)
        await pilot.press("k")
        await wait_until(pilot, lambda: body.scroll_y == body.max_scroll_y - 1)
        await pilot.press("g")
        await wait_until(pilot, lambda: body.scroll_y == 0)
        await pilot.press("j")
        await wait_until(pilot, lambda: body.scroll_y == 1)
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, HelpScreen))
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen))
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: not isinstance(app.screen, HelpScreen))
        await pilot.press("q")
        await wait_until(pilot, lambda: not app.is_running)


async def test_r_records_what_the_screen_shows(tmp_path, monkeypatch):
    from dltui.protocol.messages import Sample as SampleMessage
    from dltui.recording.reader import RecordingReader

    monkeypatch.chdir(tmp_path)
    app = create_app([parse_target("local")])
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_text(pilot, LIVE_CPU)  # live before the recording starts
        await pilot.press("r")
        await wait_until(pilot, lambda: "● REC dltui-" in app.sub_title)
        await wait_for_text(pilot, "dltui — ● REC dltui-")  # first: at 80 columns it was cut
        recorder = app.recorder
        assert recorder is not None
        await wait_until(pilot, lambda: recorder.records >= 15)
        await pilot.press("r")
        assert app.recorder is None and "REC" not in app.sub_title
    (path,) = tmp_path.glob("dltui-*.dlrec")
    records = RecordingReader(path).read_all()
    kinds = [record.message.TYPE for record in records]
    # Started mid-session, it still begins with who the server is and how it is connected.
    assert kinds[:2] == ["welcome", "link"]
    assert sum(isinstance(r.message, SampleMessage) for r in records) >= 10
