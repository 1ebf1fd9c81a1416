"""ssh:// against a real sshd on loopback: the agent runs at the far end of the system's ssh
client, with no port of its own; ssh's refusals arrive in words; nothing reaches a shell."""

from __future__ import annotations

import asyncio
import json
import shlex
import socket
import subprocess
import sys

import psutil
import pytest

from dltui.client.connection import AgentConnection
from dltui.client.target import SshOptions, parse_target
from dltui.client.transport import ssh_command
from dltui.commands.exit_status import UNREACHABLE
from dltui.protocol.messages import ConnectionState, Sample
from tests.conftest import ROOT, dltui_command, wait_for, wait_until
from tests.security.sshd import start_sshd, unavailable

REMOTE = f"{sys.executable} -m dltui"


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    try:
        server = start_sshd(tmp_path_factory.mktemp("sshd"))
    except RuntimeError as exc:
        pytest.skip(f"a test sshd cannot run here: {exc}")
    yield server
    server.stop()


def address(sshd) -> str:
    return f"ssh://{sshd.user}@127.0.0.1:{sshd.port}"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(dltui_command(*args), capture_output=True, text=True, cwd=ROOT,
                          timeout=90)  # fmt: skip


def probe(sshd, *args: str, config=None, remote: str = REMOTE):
    config = config or sshd.client_config
    return run("probe", address(sshd), "--ssh-config", str(config), "--remote-dltui", remote,
               *args)  # fmt: skip


def remote_agents(sshd) -> list[psutil.Process]:
    def is_agent(process: psutil.Process) -> bool:
        try:
            return "--stdio" in process.cmdline()
        except psutil.NoSuchProcess:  # gone, or a zombie not reaped yet: no agent either way
            return False

    return [child for child in psutil.Process(sshd.process.pid).children(recursive=True)
            if is_agent(child)]  # fmt: skip


def test_probe_over_ssh(sshd):
    result = probe(sshd, "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["inventory"]["hostname"] == socket.gethostname()


async def test_a_connection_over_ssh_streams_and_its_agent_ends_with_it(sshd):
    options = SshOptions(tuple(shlex.split(REMOTE)), str(sshd.client_config))
    target = parse_target(address(sshd)).reached_with(None, options)
    messages: list = []
    connection = AgentConnection(target, lambda source, m: messages.append((source, m)))
    task = asyncio.create_task(connection.run())
    try:
        await wait_until(
            lambda: sum(isinstance(m, Sample) for _, m in messages) >= 5, 30, "samples over ssh"
        )
        assert {source for source, _ in messages} == {target.label}
        assert [m.state for _, m in messages if isinstance(m, ConnectionState)][-1] == "live"
        assert remote_agents(sshd), "the agent runs under sshd"
    finally:
        await connection.stop()
        task.cancel()
    wait_for(lambda: not remote_agents(sshd), timeout=10, what="the remote agent to exit")


def test_ssh_refusals_are_said_in_words(sshd, tmp_path):
    stranger = tmp_path / "stranger_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)],
                   check=True)  # fmt: skip
    result = probe(sshd, config=sshd.config_with(IdentityFile=str(stranger)))
    assert result.returncode == 3 and "Permission denied" in result.stderr, result.stderr
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    result = probe(sshd, config=sshd.config_with(UserKnownHostsFile=str(empty)))
    assert result.returncode == 3 and "Host key verification failed" in result.stderr
    result = probe(sshd, remote="/nonexistent/dltui")
    assert result.returncode == UNREACHABLE and "not found on the remote host" in result.stderr
    assert "--remote-dltui" in result.stderr


@pytest.mark.parametrize(
    "text",
    [
        "ssh://root@127.0.0.1;touch${IFS}/tmp/x",
        "ssh://-oProxyCommand=touch@127.0.0.1",
        "ssh://root@-oProxyCommand=touch",
        "ssh://r$(id)t@127.0.0.1",
        "ssh://root@`id`",
        "gpu-01;id:7070",
        "tls://$(id):7070",
    ],
)
def test_addresses_a_shell_or_ssh_would_read_are_refused(text):
    with pytest.raises(ValueError, match="bad agent address"):
        parse_target(text)


def test_the_remote_command_is_quoted_word_by_word(sshd, tmp_path):
    marker = tmp_path / "pwned"
    result = probe(sshd, remote=f"{REMOTE}; touch {marker}")
    assert result.returncode != 0 and not marker.exists()
    target = parse_target("ssh://ops@gpu-01:2222").reached_with(
        None, SshOptions(("~/venv/bin/dltui", "--x=$(id)"), "/etc/cfg")
    )
    command = ssh_command(target)
    assert command[:6] == ["ssh", "-T", "-e", "none", "-o", "BatchMode=yes"]
    assert command[-3:] == ["--", "gpu-01", "~/venv/bin/dltui '--x=$(id)' agent --stdio"]
    assert command[command.index("-p") : command.index("-p") + 2] == ["-p", "2222"]
    assert command[command.index("-l") : command.index("-l") + 2] == ["-l", "ops"]
