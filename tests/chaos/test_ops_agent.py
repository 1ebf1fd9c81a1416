"""Issue #14 with real processes and a real agent on the fake NVML: a process holding a GPU
context found with its owner, one in a cgroup and PID namespace of its own attributed to its
container, a Slurm job's cgroup; an XID, a link trained at x8 and a temperature rule that fires
and resolves (recorded, replayed and exported); `record --fail-on`'s exit statuses; MIG
instances and a bench aimed at one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from dltui.commands.exit_status import EVENT, REFUSED
from dltui.fleet.state import Fleet
from dltui.protocol.messages import Event, Sample, Subscribe
from dltui.recording.export import export
from dltui.recording.format import RecordingError
from dltui.recording.reader import RecordingReader
from dltui.recording.replay import ReplaySet, load_tracks
from tests.agents import connect, listed, metrics_url, one, scrape, until
from tests.conftest import ROOT, dltui_command, wait_for
from tests.fakes.gpu_work import command, hold, stop

ENOUGH = 30.0


def process_of(sample: Sample, pid: int):
    return next(p for gpu in sample.gpus for p in gpu.processes or () if p.pid == pid)


async def test_a_process_holding_a_gpu_context_is_found_with_its_owner(
    fake_nvml, agent_factory, tmp_path
):
    held = tmp_path / "held"
    held.mkdir()
    fake_nvml({"gpus": [{}, {}], "contexts": str(held)})
    agent = agent_factory()
    holder = hold(held, 1)
    try:
        client, _ = await connect(agent.address)
        await client.stream.send(Subscribe(1, 10.0))
        sample = await until(client.stream, listed(holder.pid))
        process = process_of(sample, holder.pid)
        assert [gpu.index for gpu in sample.gpus if process in (gpu.processes or [])] == [1]
        assert process.user == psutil.Process().username() and not process.own
        assert process.command.startswith(sys.executable) and "hold_context" in process.command
        assert process.memory == 3 << 30
        assert abs(process.started - psutil.Process(holder.pid).create_time()) < 1e-3
        await client.close()
    finally:
        stop(holder)


def _cgroup_root() -> Path | None:
    """A cgroup hierarchy this test may make folders in and move processes into."""
    if os.geteuid() != 0:
        return None
    for root in (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup")):
        probe = root / f"dltui-test-{os.getpid()}"
        try:
            probe.mkdir()
            probe.rmdir()
        except OSError:
            continue
        return root
    return None


CONTAINER = f"c0ffee{os.getpid():010x}" + "0" * 48


@pytest.mark.parametrize(
    ("folder", "namespace", "expected"),
    [
        (f"docker/{CONTAINER}", True, {"container": CONTAINER, "runtime": "docker", "ns_pid": 1}),
        ("slurm/uid_0/job_41233/step_0", False, {"job": "41233", "container": None}),
    ],
    ids=["container", "slurm"],
)
async def test_a_process_is_placed_by_its_own_cgroup(
    fake_nvml, agent_factory, tmp_path, folder, namespace, expected
):
    root = _cgroup_root()
    if root is None:
        pytest.skip("making cgroups and moving processes into them needs root and a cgroupfs")
    if namespace and subprocess.run(["unshare", "--pid", "--fork", "true"]).returncode != 0:
        pytest.skip("unshare --pid is not permitted here")
    held = tmp_path / "held"
    held.mkdir()
    fake_nvml({"gpus": [{}], "contexts": str(held)})
    agent = agent_factory()
    group = root / folder
    made = [group, *(parent for parent in group.parents if parent != root and root in parent.parents
                     and not parent.exists())]  # fmt: skip
    group.mkdir(parents=True)
    holder = hold(held, 0, *(["unshare", "--pid", "--fork"] if namespace else []))
    try:
        (pid,) = [int(path.name) for path in held.iterdir()]  # the host's PID, as NVML's
        (group / "cgroup.procs").write_text(f"{pid}\n")
        client, _ = await connect(agent.address)
        await client.stream.send(Subscribe(1, 10.0))

        def placed(message) -> bool:
            if not listed(pid)(message):
                return False
            process = process_of(message, pid)
            return all(getattr(process, name) == value for name, value in expected.items())

        await until(client.stream, placed)
        await client.close()
    finally:
        stop(holder)
        procs = group / "cgroup.procs"
        wait_for(lambda: not procs.read_text().strip(), ENOUGH, "the cgroup emptied")
        for folder_made in made:  # innermost first
            folder_made.rmdir()


async def test_an_injected_xid_is_an_event_and_fires_an_event_rule(
    fake_nvml, agent_factory, tmp_path
):
    control = fake_nvml({"gpus": [{}, {}]})
    config = tmp_path / "agent.toml"
    config.write_text('[[alert]]\nname = "xid"\nwhen = "event xid"\nseverity = "critical"\n')
    agent = agent_factory("--config", str(config))
    client, _ = await connect(agent.address)
    command(control, gpu=1, xid=79)
    xid = await until(client.stream, lambda m: isinstance(m, Event) and m.kind == "xid")
    assert (xid.gpu, xid.value, xid.severity, xid.state) == (1, 79, "critical", "once")
    assert xid.detail == "XID 79: GPU has fallen off the bus"
    alert = await until(client.stream, lambda m: isinstance(m, Event) and m.kind == "alert")
    assert (alert.rule, alert.gpu, alert.id) == ("xid", 1, xid.id + 1)
    wait_for(lambda: any(f"event {xid.id}, critical xid on GPU 1" in line for line in agent.log),
             what="the event in the agent's log")  # fmt: skip
    await client.close()


async def test_listen_on_the_command_line_wins_over_stdio_in_the_config(agent_factory, tmp_path):
    """The file's settings are defaults: its `stdio = true` once beat `--listen`."""
    config = tmp_path / "agent.toml"
    config.write_text("stdio = true\n")
    agent = agent_factory("--config", str(config))  # with --listen 127.0.0.1:0
    assert agent.port is not None, agent.log
    client, welcome = await connect(agent.address)
    assert welcome.inventory.hostname
    await client.close()


async def test_an_xid_a_client_missed_is_told_at_login_and_probe_reports_it(
    fake_nvml, agent_factory
):
    """An XID happens once, with nothing to resolve it: a client that logs in afterwards is
    still told (for ONCE_OPEN_S), and `probe` says the server is not ok."""
    control = fake_nvml({"gpus": [{}, {}]})
    agent = agent_factory()
    client, _ = await connect(agent.address)
    command(control, gpu=1, xid=79)
    xid = await until(client.stream, lambda m: isinstance(m, Event) and m.kind == "xid")
    await client.close()
    late, _ = await connect(agent.address)
    assert await until(late.stream, lambda m: isinstance(m, (Event, Sample))) == xid
    await late.close()
    health = probe_json(agent.address)["health"]
    assert not health["ok"] and health["worst"] == "critical"
    assert [(e["kind"], e["gpu"]) for e in health["open"]] == [("xid", 1)]
    text = subprocess.run(dltui_command("probe", agent.address), capture_output=True, text=True,
                          cwd=ROOT, timeout=60, check=True).stdout  # fmt: skip
    assert "health    critical: gpu 1: XID 79: GPU has fallen off the bus" in text.splitlines()
    assert "  critical  gpu 1: XID 79: GPU has fallen off the bus" in text.splitlines()


def probe_json(address: str) -> dict:
    done = subprocess.run(dltui_command("probe", address, "--json"), capture_output=True,
                          text=True, cwd=ROOT, timeout=60, check=True)  # fmt: skip
    return json.loads(done.stdout)


async def test_a_link_trained_at_x8_is_a_condition_every_client_is_told(fake_nvml, agent_factory):
    fake_nvml({"topology": "pcie8"})  # GPU 5 sits in its x16 slot at x8
    agent = agent_factory()
    first, _ = await connect(agent.address)
    await first.stream.send(Subscribe(1, 10.0))
    event = await until(first.stream, lambda m: isinstance(m, Event))
    assert (event.kind, event.gpu, event.state, event.value) == ("pcie_link", 5, "raised", 8)
    assert event.detail == "PCIe link trained at gen5 x8 (of x16)"
    late, _ = await connect(agent.address)  # told at once, before any sample
    again = await until(late.stream, lambda m: isinstance(m, (Event, Sample)))
    assert again == event
    health = probe_json(agent.address)["health"]
    assert not health["ok"] and health["worst"] == "warning"
    assert [e["kind"] for e in health["raised"]] == ["pcie_link"]
    assert health["gpus"][5]["pcie_width"] == 8 and health["gpus"][4]["pcie_width"] == 16
    await first.close()
    await late.close()


def recorded(path: Path) -> list:
    try:
        return [record.message for record in RecordingReader(path).read_all()]
    except RecordingError:  # not created yet, or its header not yet whole
        return []


def alert_states(path: Path) -> list[str]:
    return [m.state for m in recorded(path) if isinstance(m, Event) and m.kind == "alert"]


def test_a_temperature_rule_fires_and_resolves_recorded_replayed_and_exported(
    fake_nvml, agent_factory, tmp_path
):
    control = fake_nvml({"gpus": [{}]})
    config = tmp_path / "agent.toml"
    config.write_text('[[alert]]\nname = "hot"\nwhen = "gpu.temp > 85 for 1s"\n'
                      'severity = "warning"\n')  # fmt: skip
    agent = agent_factory("--config", str(config))
    path = tmp_path / "hot.dlrec"
    recorder = subprocess.Popen(dltui_command("record", "-o", str(path), agent.address),
                                cwd=ROOT, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        wait_for(lambda: any(isinstance(m, Sample) for m in recorded(path)), ENOUGH, "samples")
        command(control, gpu=0, set={"temp": 90})
        wait_for(lambda: alert_states(path) == ["raised"], ENOUGH, "the rule firing")
        command(control, gpu=0, set={"temp": 40})
        wait_for(lambda: alert_states(path) == ["raised", "resolved"], ENOUGH, "it resolving")
    finally:
        recorder.send_signal(signal.SIGTERM)
    assert recorder.wait(timeout=30) == 0
    raised, resolved = [m for m in recorded(path) if isinstance(m, Event)]
    assert raised.detail == "hot: gpu.temp > 85 for 1s holds on GPU 0 (temp 90 °C)"
    assert (resolved.rule, resolved.value) == ("hot", 40)

    replay = ReplaySet(load_tracks([path]), Fleet())
    replay.seek(replay.length)
    (server,) = replay.fleet.servers.values()
    assert [e.state for e in server.events.events] == ["raised", "resolved"]
    assert server.events.raised == {}
    replay.seek(0.0)  # a seek back rebuilds the state: the events come again as it plays
    replay.seek(replay.length)
    assert len(server.events.events) == 2

    rows = export([path], "json", tmp_path / "out.json", print)
    assert rows["events"] == 2
    tables = json.loads((tmp_path / "out.json").read_text())
    assert [(r["kind"], r["state"], r["rule"], r["gpu"]) for r in tables["events"]] == [
        ("alert", "raised", "hot", 0), ("alert", "resolved", "hot", 0)]  # fmt: skip


def start_recorder(agent, path: Path, *options: str) -> subprocess.Popen[str]:
    return subprocess.Popen(dltui_command("record", "-o", str(path), *options, agent.address),
                            cwd=ROOT, stderr=subprocess.PIPE, text=True)  # fmt: skip


@pytest.mark.parametrize(
    ("fail_on", "xids", "status"),
    [("critical", [13, 79], EVENT), ("warning", [13], EVENT), ("critical", [13], 0)],
    ids=["critical", "warning", "not-severe-enough"],
)
def test_record_fail_on_exits_7_once_an_event_that_severe_arrives(
    fake_nvml, agent_factory, tmp_path, fail_on, xids, status
):
    control = fake_nvml({"gpus": [{}]})
    agent = agent_factory()
    path = tmp_path / "watch.dlrec"
    recorder = start_recorder(agent, path, "--fail-on", fail_on, "--duration", "60")
    try:
        wait_for(lambda: any(isinstance(m, Sample) for m in recorded(path)), ENOUGH, "samples")
        for code in xids:
            command(control, gpu=0, xid=code)
            wait_for(lambda c=code: any(isinstance(m, Event) and m.value == c
                                        for m in recorded(path)),
                     ENOUGH, f"XID {code}")  # fmt: skip
        if status == 0:
            time.sleep(0.5)  # ok: what is checked is that the recorder does NOT stop
            assert recorder.poll() is None
            recorder.send_signal(signal.SIGTERM)
        _, stderr = recorder.communicate(timeout=ENOUGH)
    finally:
        if recorder.poll() is None:
            recorder.kill()
    assert recorder.returncode == status, stderr
    if status == EVENT:
        severity, detail = ("critical", "XID 79: GPU has fallen off the bus") if (
            fail_on == "critical") else ("warning", "XID 13: graphics engine")  # fmt: skip
        last = stderr.strip().splitlines()[-1]
        assert last.startswith(f"dltui record: {severity} event from ") and detail in last
        assert any(isinstance(m, Event) and m.detail.startswith(detail.split(":")[0])
                   for m in recorded(path))  # fmt: skip


async def test_mig_instances_are_listed_and_a_bench_aims_at_one(fake_nvml, agent_factory):
    fake_nvml({"gpus": [{"mig": ["1g.18gb", "3g.71gb"]}]})
    agent = agent_factory()
    _, welcome = await connect(agent.address)
    (gpu,) = welcome.inventory.gpus
    assert gpu.mig and [i.profile for i in gpu.mig_instances] == ["1g.18gb", "3g.71gb"]
    unknown = subprocess.run(
        dltui_command("bench", "kernels", "--agent", agent.address, "--set", "tiny", "--kind",
                      "gemm", "--device", "cuda:MIG-deadbeef-0000-0000-0000-000000000000"),
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert unknown.returncode == REFUSED
    assert "no MIG instance MIG-deadbeef-0000-0000-0000-000000000000 on this server" in (
        unknown.stderr)  # fmt: skip
    assert gpu.mig_instances[0].uuid in unknown.stderr  # it says which there are


def test_events_and_the_conditions_up_are_metrics(fake_nvml, agent_factory):
    control = fake_nvml({"topology": "pcie8"})  # GPU 5 at x8: a condition up from the start
    agent = agent_factory("--metrics", "127.0.0.1:0")
    url = metrics_url(agent)
    command(control, gpu=1, xid=79)
    both = {("dltui_events_total", "xid"), ("dltui_events_total", "pcie_link")}
    wait_for(lambda: both <= _events(scrape(url)[0]), ENOUGH, "the XID and the link's event")
    series, _ = scrape(url)
    assert one(series, "dltui_events_total", kind="xid", severity="critical") == 1
    assert one(series, "dltui_events_total", kind="pcie_link", severity="warning") == 1
    assert one(series, "dltui_condition_up", kind="pcie_link", gpu="5", rule="") == 1
    assert "xid" not in {
        dict(key)["kind"] for (name, key) in series if name == "dltui_condition_up"
    }


def _events(series: dict) -> set[tuple[str, str]]:
    return {(name, dict(key)["kind"]) for (name, key) in series if name == "dltui_events_total"}
