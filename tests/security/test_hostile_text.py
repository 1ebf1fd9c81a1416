"""Hostile text: markup, escape sequences, control characters and any Unicode as host, GPU and
process names and as an event's words, through a recording into the TUI (Pilot), `export`
and `report`; and through a real agent (the chaos tests' fake NVML, a process whose name is
not UTF-8) into `probe`, text and JSON. Nothing may raise, and no ESC byte may reach a
screen, a terminal or a file."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dltui.client.connection import handshake
from dltui.client.target import parse_target
from dltui.client.transport import open_transport
from dltui.foreign_text import LIMIT, shown
from dltui.protocol.messages import ConnectionState, Event, JobProgress, Sample, Subscribe, Welcome
from dltui.protocol.samples import GpuProcess, GpuSample
from dltui.recording.export import export
from dltui.recording.format import Header
from dltui.recording.report import write_report
from dltui.recording.writer import RecordingWriter
from dltui.tui.replay_app import create_replay_app
from tests.agents import connect
from tests.conftest import ROOT, dltui_command, wait_for
from tests.fakes.hostile import HOSTILE_COMM, NAMED
from tests.tui.pilot import screen_text, wait_until
from tests.tui.synthetic import server_messages

FRAGMENTS = ["[/]", "[bold", "[b]x[/b]", "\x1b]0;owned\x07", "\x1b[2J", "\x1b[31m", "\\[",
             "\\", "|", "<script>alert(1)</script>", "\n", "\r", "\u202e", "\x00", "\x9b",
             "é", "漢", "🙂"]  # fmt: skip
NAMES = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=6), min_size=1, max_size=8).map(
    "".join
)


@given(NAMES | st.text() | st.binary())
@settings(max_examples=300, deadline=None)
def test_shown_text_is_one_bounded_printable_line(text):
    line = shown(text)
    assert len(line) <= LIMIT
    assert line.isprintable()
    line.encode("utf-8")  # lone surrogates are gone


def hostile_recording(path: Path, host: str, gpu: str, process: str, words: str) -> None:
    """A server whose agent said these names, as `record` would have written it."""
    messages = server_messages(host, 2, 1000.0, seconds=4, rate=5)
    welcome = messages[0]
    assert isinstance(welcome, Welcome)
    inventory = welcome.inventory
    gpus = [replace(inventory.gpus[0], name=gpu), *inventory.gpus[1:]]
    messages[0] = replace(welcome, inventory=replace(inventory, cpu_model=words, gpus=gpus))
    holder = GpuProcess(4242, 2**30, process, process, process, 999.0, container=process,
                        job=process)  # fmt: skip
    last = messages[-2]
    assert isinstance(last, Sample)
    gpus = [GpuSample(0, "ok", {"util_gpu": 50, words: 1.0}, {words: words}, [holder]),
            *last.gpus[1:]]  # fmt: skip
    messages += [
        Sample(last.seq + 1, last.wall + 0.2, last.mono + 0.2, last.host, gpus),
        Event(1, words, "warning", words, last.wall, 0),
        JobProgress("job1", 1, 2, words),
        ConnectionState("offline", last.wall + 0.5, words),
    ]
    writer = RecordingWriter(path, Header(words, 1000.0, {words: words}))
    received = 1000.0
    for message in messages:
        received = getattr(message, "wall", received)
        writer.write(host, message, received)
    writer.close()


@given(host=NAMES, gpu=NAMES, process=NAMES, words=NAMES)
@settings(
    max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_hostile_names_in_a_recording(tmp_path_factory, host, gpu, process, words):
    folder = tmp_path_factory.mktemp("hostile")
    path = folder / "hostile.dlrec"
    hostile_recording(path, host, gpu, process, words)

    async def replay() -> str:
        app = create_replay_app([path])
        async with app.run_test(size=(150, 50)) as pilot:
            await pilot.press("9")  # near the end: every frame before it applied at once
            await wait_until(pilot, lambda: not app.replay.playing)  # and played to the end
            text = screen_text(app)
            await pilot.press("d")  # the detail screen draws the processes and events
            await pilot.pause(0.2)
            return text + screen_text(app) + app.export_screenshot()

    screen = asyncio.run(replay())
    assert "\x1b" not in screen
    assert shown(gpu)[:10] in screen.replace("\xa0", " ") or not shown(gpu).strip()

    for fmt, out in (("csv", folder / "csv"), ("json", folder / "t.json"),
                     ("openmetrics", folder / "t.om")):  # fmt: skip
        export([path], fmt, out, print)
        for file in [out] if out.is_file() else out.iterdir():
            assert b"\x1b" not in file.read_bytes(), file
    write_report([path], folder / "report", print)
    markdown = (folder / "report" / "index.md").read_text()
    html = (folder / "report" / "index.html").read_text()
    assert "\x1b" not in markdown + html
    assert "<script>" not in markdown + html


HOSTILE_GPU = "\x1b]0;owned\x07[/]NVIDIA [bold H200\x1b[2J"


def test_a_real_agent_with_hostile_names_through_probe(fake_nvml, agent_factory):
    """A GPU NVML names with escape sequences and markup, held by a process whose name is not
    UTF-8: the agent keeps its whole tick (the process listed, its name decoded with
    replacement) and `probe` prints no escape sequence, in text or JSON."""
    neighbour = subprocess.Popen(
        [sys.executable, "-c", NAMED, HOSTILE_COMM.hex(), b"\xff\x1b[2J"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert neighbour.stdout is not None and neighbour.stdout.readline() == b"\n"
        spec = {"gpus": [{"name": HOSTILE_GPU, "processes": [[neighbour.pid, 1 << 30]]}]}
        control = fake_nvml(spec)  # and a temperature JSON has no number for
        control.write_text(json.dumps({"gpu": 0, "set": {"temp": float("inf")}}) + "\n")
        agent = agent_factory()
        text = subprocess.run(dltui_command("probe", agent.address), cwd=ROOT,
                              capture_output=True, timeout=60)  # fmt: skip
        assert text.returncode == 0, text.stderr.decode(errors="replace")
        assert b"\x1b" not in text.stdout + text.stderr
        assert shown(HOSTILE_GPU).encode() in text.stdout  # visible, as data
        done = subprocess.run(dltui_command("probe", agent.address, "--json"), cwd=ROOT,
                              capture_output=True, timeout=60)  # fmt: skip
        assert done.returncode == 0 and b"\x1b" not in done.stdout
        report = json.loads(done.stdout, parse_constant=lambda word: pytest.fail(word))
        assert report["inventory"]["gpus"][0]["name"] == shown(HOSTILE_GPU)
        assert report["sample"]["gpus"][0]["values"]["temp"] is None
        assert "sample.gpus[0].values.temp: inf" in report["null_because_not_finite"]

        async def listed() -> Sample:
            client, _ = await connect(agent.address)
            await client.stream.send(Subscribe(1, 10.0))
            async with asyncio.timeout(30):
                while True:
                    message = await client.stream.receive()
                    if isinstance(message, Sample) and message.gpus[0].processes:
                        await client.close()
                        return message

        sample = asyncio.run(listed())
        (process,) = sample.gpus[0].processes or []
        assert process.pid == neighbour.pid and process.name == "\ufffd\ufffd\x1b]0;x\x07[/]"
        assert process.user and process.command  # the slow tick whole: not lost to one name
        assert {"cpu", "mem_used", "load1"} <= sample.host.values.keys()
        assert not [line for line in agent.log if "Traceback" in line]
    finally:
        neighbour.kill()
        neighbour.wait()


async def test_a_clients_name_cannot_forge_a_line_of_the_agents_log(agent_factory):
    agent = agent_factory()
    forged = "2026-12-06 09:00:00,000 dltui-agent WARNING authentication failed from 10.0.0.66"
    transport = await open_transport(parse_target(agent.address))
    await handshake(transport.stream, None, "evil\n" + forged + "\x1b[31m" + "x" * 1000)
    await transport.close()
    line = wait_for(lambda: next((line for line in agent.log if "client evil" in line), None),
                    timeout=10, what="the client's log line")  # fmt: skip
    assert not any(logged.startswith(forged) for logged in agent.log)
    assert "evil\\n2026-12-06" in line and "\x1b" not in line and len(line) < 200
