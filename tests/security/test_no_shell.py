"""Nothing a user or a peer types reaches a shell: plans are names and numbers, checked before
anything runs; addresses are checked where they are parsed; the agent's options are checked,
from the command line or from its config file."""

from __future__ import annotations

import asyncio
import subprocess
from dataclasses import replace

import pytest

from dltui.agent.config import ConfigFileError, load_config
from dltui.protocol.bench_plans import ClusterRole, KernelPlan
from dltui.protocol.messages import JobEnd, Run
from tests.agents import connect
from tests.conftest import ROOT, dltui_command

HOSTILE = ["$(touch {marker})", "`touch {marker}`", "x; touch {marker}", "x && touch {marker}",
           "x | touch {marker}", "x\ntouch {marker}", "-oProxyCommand=touch {marker}"]  # fmt: skip


def hostile_plans(marker: str) -> list[KernelPlan]:
    base = KernelPlan(shape_set="tiny", kinds=["allreduce"], device="cpu")
    plans = []
    for text in (h.format(marker=marker) for h in HOSTILE):
        role = ClusterRole(text, 29500, 0, 1, 2)
        plans += [
            replace(base, framework=text),
            replace(base, shape_set=text),
            replace(base, kinds=[text]),
            replace(base, precisions=[text]),
            replace(base, device=text),
            replace(base, cluster=role),
            replace(base, framework="tensorflow",
                    cluster=replace(role, master_addr="h", peers=[f"{text}:1", "h:2"])),
        ]  # fmt: skip
    return plans


async def test_hostile_plan_fields_are_refused_and_nothing_runs(agent_factory, tmp_path):
    marker = tmp_path / "pwned"
    agent = agent_factory()
    client, _ = await connect(agent.address)
    plans = hostile_plans(str(marker))
    for seq, plan in enumerate(plans, start=1):
        await client.stream.send(Run(seq, f"job-{seq}", plan))
    ends: list[JobEnd] = []
    while len(ends) < len(plans):
        message = await asyncio.wait_for(client.stream.receive(), 15)
        if isinstance(message, JobEnd):
            ends.append(message)
    assert all(end.state == "refused" and end.error.startswith("bad plan") for end in ends)
    assert not marker.exists()
    await client.close()


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(dltui_command(*args), capture_output=True, text=True, cwd=ROOT,
                          timeout=60)  # fmt: skip


@pytest.mark.parametrize("hostile", HOSTILE)
def test_hostile_addresses_are_usage_errors(hostile, tmp_path):
    marker = tmp_path / "pwned"
    text = hostile.format(marker=marker)
    for what, args in (
        ("agent", ("probe", f"{text}:7070")),
        ("agent", ("probe", f"ssh://{text}")),
        ("agent", ("probe", f"ssh://root@{text}")),
        (
            "rendezvous",
            ("bench", "kernels", "--kind", "allreduce", "--rendezvous", f"{text}:29500"),
        ),
        ("agent", ("agent", "--listen", f"{text}:7070")),
    ):
        result = run(*args)
        assert result.returncode == 2, (args, result.stderr)
        assert f"bad {what} address" in result.stderr
    assert not marker.exists()


def test_the_agent_reads_and_checks_its_config_file(tmp_path, secret_file):
    good = tmp_path / "agent.toml"
    good.write_text(f'listen = "0.0.0.0:7070"\nrate = 5\nsecret_file = "{secret_file}"\n'
                    "nvml_timeout = 90\ncpu = 3\n")  # fmt: skip
    assert load_config(good) == {
        "listen": ("0.0.0.0", 7070), "rate": 5.0, "secret_file": str(secret_file),
        "nvml_timeout": 90.0, "cpu": 3,
    }  # fmt: skip
    bad = tmp_path / "bad.toml"
    for text, words in [
        ('listen = "0.0.0.0:7070"\nshell = "rm -rf /"\n', "unknown keys shell"),
        ('listen = "$(id):7070"\n', "listen: bad agent address"),
        ("rate = 1000\n", "rate: expected a number of Hz in (0, 100]"),
        ('rate = "fast"\n', "rate: expected a number"),
        ('log_level = "trace"\n', "log_level: expected one of debug, info, warning"),
        ("nvml_timeout = 0\n", "nvml_timeout: expected seconds in (0, 3600]"),
        ("cpu = -1\n", 'cpu: expected a CPU number or "any", got -1'),
        ('cpu = "last"\n', 'cpu: expected a CPU number or "any"'),
        ('stdio = true\nlisten = "127.0.0.1:1"\n', "exclude each other"),
        ("listen = [\n", "not valid TOML"),
    ]:
        bad.write_text(text)
        with pytest.raises(ConfigFileError, match=words.replace("(", r"\(").replace("]", r"\]")):
            load_config(bad)
    with pytest.raises(ConfigFileError, match="cannot read config"):
        load_config(tmp_path / "missing.toml")


def test_dltui_agent_config_starts_an_agent_and_the_command_line_wins(agent_factory, tmp_path):
    config = tmp_path / "agent.toml"
    config.write_text('listen = "0.0.0.0:7070"\nrate = 4\n')
    # Beyond loopback without a secret: refused, from the file's own listen.
    refused = run("agent", "--config", str(config))
    assert refused.returncode == 2 and "not loopback" in refused.stderr
    agent = agent_factory("--config", str(config))  # the fixture's --listen 127.0.0.1:0 wins
    assert agent.port and any("4 Hz" in line for line in agent.log)
    bad = tmp_path / "bad.toml"
    bad.write_text("nonsense = 1\n")
    result = run("agent", "--config", str(bad))
    assert result.returncode == 2 and "unknown keys nonsense" in result.stderr
    result = run("agent")
    assert result.returncode == 2 and "--listen HOST:PORT or --stdio" in result.stderr
