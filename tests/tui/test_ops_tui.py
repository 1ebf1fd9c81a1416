"""Whose work is on the GPUs and the health events in the TUI: the busy line and the worst
condition under a server's header, the detail screen's processes by owner, its events and MIG
instances, the fleet's events (`e`), the launcher's flag, and event marks on the charts."""

from __future__ import annotations

import re
import time
from dataclasses import replace

from dltui.protocol.inventory import GpuInfo, Inventory, MigInstance
from dltui.protocol.messages import ConnectionState, Event, Sample, Welcome
from dltui.protocol.samples import GpuProcess, GpuSample, HostSample, MigSample
from dltui.tui import create_app
from dltui.tui.screens.detail import DetailScreen
from dltui.tui.screens.events import EventsScreen
from dltui.tui.screens.launcher import LauncherScreen
from dltui.tui.spark import EVENT_MARK, cell_of, mark_events
from tests.fakes.messages import gpu_box_messages
from tests.tui.pilot import screen_text, wait_for_text, wait_until

GIB = 2**30
ALICE = [
    GpuProcess(
        4242, 70 * GIB, "python", "alice", "python train.py --lr 0.1", sm_util=87.0, job="41233"
    ),
    GpuProcess(4243, 20 * GIB, "python", "alice", "python train.py --lr 0.1", job="41233"),
]
OURS = GpuProcess(999, 10 * GIB, "python", "root", "python -m dltui.bench.worker", own=True)


def busy_sample(now: float, seq: int = 40) -> Sample:
    gpus = [GpuSample(0, "ok", {"util_gpu": 99.0}, processes=[ALICE[0], OURS]),
            GpuSample(1, "ok", {"util_gpu": 99.0}, processes=[ALICE[1]])]  # fmt: skip
    return Sample(seq, now + 4.0, 5.0, HostSample({"cpu": 10.0}), gpus)


LINK = Event(1, "pcie_link", "warning", "PCIe link trained at gen5 x8 (of x16)", 0.0, gpu=1,
             value=8)  # fmt: skip
XID = Event(2, "xid", "critical", "XID 79: GPU has fallen off the bus", 0.0, gpu=0,
            state="once", value=79)  # fmt: skip


async def test_a_busy_and_sick_server_says_so_under_its_header_and_in_detail() -> None:
    app = create_app([])
    now = time.time()
    async with app.run_test(size=(160, 70)) as pilot:
        for message in gpu_box_messages(now):
            app.fleet.apply("gpubox:7070", message)
        app.fleet.apply("gpubox:7070", busy_sample(now))
        app.fleet.apply("gpubox:7070", replace(LINK, wall=now + 3))
        # The header's flag says "busy: user alice" a frame before the note's line says on
        # which GPUs at times: wait for the whole line (as wrapped).
        busy_line = r"busy: user alice \(job\s+41233\) on GPU 0, 1"
        await wait_until(
            pilot, lambda: re.search(busy_line, screen_text(app).replace("\n", " ")) is not None
        )
        failed = Event(9, "remap_failed", "critical", "a row remapping failed", now + 3.2, gpu=1)
        app.fleet.apply("gpubox:7070", failed)  # a critical condition outranks the busy line
        text = await wait_for_text(pilot, "⚠ GPU 1: a row remapping failed")
        assert "(+1 more)" in text and "busy: user alice" not in text
        await pilot.press("d")
        await wait_until(pilot, lambda: isinstance(app.screen, DetailScreen))
        app.fleet.apply("gpubox:7070", replace(XID, wall=now + 3.5))
        # The events panel, redrawn with the XID above the link (which comes up in the header
        # and the panel's title a frame before the panel's lines at times).
        text = await wait_for_text(pilot, r"critical +xid .*XID 79(?s:.*)● .*x8 \(of x16\)")
        assert re.search(r"user alice \(job 41233\) +2 processes, 90.0 GiB", text)
        assert re.search(r"4242 GPU 0 · 70.0 GiB · SM 87% +python train.py --lr 0.1", text)
        assert re.search(r"4243 GPU 1 · 20.0 GiB", text)
        assert re.search(r"dltui \(this agent's benchmark\) +1 process, 10.0 GiB", text)
        assert "Health events (3 open, 3 in all)" in text  # the XID too, as the title counts it
        lines = text.splitlines()
        xid = next(line for line in lines if "XID 79" in line)
        link = next(line for line in lines if "x8 (of x16)" in line and "●" in line)
        assert "critical" in xid and lines.index(xid) < lines.index(link)  # newest first


async def test_the_fleets_events_screen_and_the_launchers_flag() -> None:
    app = create_app([])
    now = time.time()
    answers: list = []
    async with app.run_test(size=(150, 40)) as pilot:
        for message in gpu_box_messages(now):
            app.fleet.apply("gpubox:7070", message)
        app.fleet.apply("gpubox:7070", busy_sample(now))
        for event in (LINK, XID, replace(LINK, id=3, state="resolved", detail="ended: link")):
            app.fleet.apply("gpubox:7070", replace(event, wall=now + event.id))
        # The XID is open: the header flags it over the GPUs' other work, the title counts it.
        await wait_for_text(pilot, r"⚠ GPU \d: XID 79")
        await wait_until(pilot, lambda: "▲ 1 critical" in app.sub_title)
        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(app.screen, EventsScreen))
        text = await wait_for_text(pilot, "ended: link")
        rows = [line for line in text.splitlines() if "gpubox" in line]
        assert [("resolved" in r, "XID 79" in r, "x8" in r) for r in rows] == [
            (True, False, False), (False, True, False), (False, False, True)]  # fmt: skip
        # Open as the title counts it ('▲ 1 critical'), the XID too: 'once' and 'up' (of a
        # PCIe link, read as 'link up') once said otherwise.
        assert re.search(r"critical +xid +open", rows[1]) and " up " not in rows[2], rows
        await pilot.press("escape")
        await app.push_screen(LauncherScreen(app.fleet), answers.append)
        text = await wait_for_text(pilot, "run anyway")
        assert "busy: gpubox: user alice (job 41233) on GPU 0, 1" in text
        await pilot.click("#force")
        await pilot.press("s")
        await wait_until(pilot, lambda: len(answers) == 1)
    ((plan, _),) = answers[0].launch.plans
    assert plan.force


async def test_mig_instances_in_the_detail_screen() -> None:
    app = create_app([])
    now = time.time()
    small = MigInstance("MIG-1111", 1, 0, "1g.18gb", 18 * GIB, 16)
    large = MigInstance("MIG-2222", 2, 0, "3g.71gb", 71 * GIB, 48)
    gpu = GpuInfo(0, "NVIDIA H200", "GPU-0", 141 * GIB, mig=True, mig_instances=[small, large])
    inventory = Inventory("migbox", "Linux", "Xeon", 64, 512 * GIB, [gpu])
    running = GpuProcess(5151, 9 * GIB, "python", "bob", "python infer.py", gpu_instance=1)
    reading = GpuSample(0, "ok", {}, processes=[running],
                        mig=[MigSample(1, {"mem_used": 9 * GIB, "sm_active": 55.0})])  # fmt: skip
    async with app.run_test(size=(150, 60)) as pilot:
        for message in (Welcome("a", inventory, 10.0, now, 1.0), ConnectionState("live", now),
                        Sample(1, now, 1.0, HostSample({}), [reading])):  # fmt: skip
            app.fleet.apply("migbox:7070", message)
        await wait_for_text(pilot, "migbox")
        await pilot.press("d")
        text = await wait_for_text(pilot, "MIG instances")
        assert re.search(
            r"GPU 0 GI 1 · 1g.18gb · 9.0 GiB of 18.0 GiB · SM 55% · 1 process +MIG-1111", text
        )
        assert re.search(r"GPU 0 GI 2 · 3g.71gb · 71.0 GiB · SM – · 0 processes +MIG-2222", text)
        assert "GPU 0 MIG 1 · 9.0 GiB" in screen_text(app)


def test_events_are_marked_over_the_phase_bands() -> None:
    first = cell_of(1000.0, 0.5)
    marks = mark_events([0, 1, 3, 1], [1000.6, 5.0], first, 0.5)
    assert marks == [0, EVENT_MARK, 3, 1]  # the event's cell; one long gone is not drawn
