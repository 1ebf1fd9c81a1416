"""The client's connection loop and `dltui probe` against real agents."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import subprocess

import pytest

from dltui.client import connection as connection_module
from dltui.client.connection import (
    STARTED_AGENT_TIMEOUT,
    AgentConnection,
    handshake,
    handshake_timeout,
)
from dltui.client.target import Target, parse_target
from dltui.client.transport import open_transport
from dltui.commands.exit_status import UNREACHABLE
from dltui.fleet.state import Fleet
from dltui.protocol.errors import ProtocolError
from dltui.protocol.fields import HOST_FIELDS
from dltui.protocol.framing import encode_frame
from dltui.protocol.messages import PROTOCOL_VERSION, ConnectionState, Hello, Sample
from dltui.protocol.wire import to_wire
from dltui.telemetry.sampler import OPEN_DEADLINE
from tests.conftest import ROOT, dltui_command, free_port, wait_until


async def test_local_agent_over_stdio_feeds_the_fleet():
    fleet = Fleet()
    server = fleet.add("local")
    connection = AgentConnection(Target("local"), fleet.apply, rate_hz=10.0)
    task = asyncio.create_task(connection.run())
    try:
        await wait_until(lambda: server.samples >= 3, what="samples")
        assert server.link == "live" and server.name == socket.gethostname()
        await wait_until(lambda: server.rtt is not None, what="a pong")
        assert 0 <= server.rtt < 1.0 and abs(server.offset) < 1.0
        assert server.host["cpu"].last() is not None
    finally:
        await connection.stop()
        task.cancel()


async def test_reconnects_after_the_agent_restarts(agent_factory):
    first = agent_factory()
    messages: list = []
    connection = AgentConnection(parse_target(first.address), lambda s, m: messages.append(m))
    task = asyncio.create_task(connection.run())

    def states() -> list[str]:
        return [m.state for m in messages if isinstance(m, ConnectionState)]

    try:
        await wait_until(lambda: any(isinstance(m, Sample) for m in messages), what="samples")
        first.process.kill()
        await wait_until(lambda: states()[-1] == "offline", timeout=5, what="offline")
        agent_factory(listen=first.address)  # same port, new process
        count = len(messages)
        await wait_until(
            lambda: any(isinstance(m, Sample) for m in messages[count:]), what="samples again"
        )
        assert states()[-1] == "live" and "offline" in states()
    finally:
        await connection.stop()
        task.cancel()


async def test_an_agent_that_never_says_hello_is_offline_and_tried_again(monkeypatch):
    """A hung agent is not a refusal: the link goes offline with the reason and is retried
    at the usual pace, not after the pause that follows a wrong secret."""
    monkeypatch.setattr(connection_module, "HANDSHAKE_TIMEOUT", 0.3)
    accepted: list[asyncio.StreamWriter] = []
    silent = await asyncio.start_server(lambda _, writer: accepted.append(writer), "127.0.0.1", 0)
    port = silent.sockets[0].getsockname()[1]
    links: list[ConnectionState] = []
    connection = AgentConnection(
        parse_target(f"127.0.0.1:{port}"),
        lambda _, m: isinstance(m, ConnectionState) and links.append(m),
    )
    task = asyncio.create_task(connection.run())
    try:
        await wait_until(lambda: len(accepted) >= 3, timeout=10, what="three attempts")
        states = [link.state for link in links]
        assert "auth_failed" not in states and "offline" in states
        offline = next(link for link in links if link.state == "offline")
        assert offline.detail == "no handshake from the agent within 0.3 s"
    finally:
        await connection.stop()
        task.cancel()
        silent.close()


@pytest.mark.parametrize("size", [0, 16])
async def test_a_challenge_that_is_not_32_bytes_is_refused(size):
    """A client holds an agent to the same rule the agent holds it to (docs/protocol.md)."""
    hello = encode_frame(to_wire(Hello(PROTOCOL_VERSION, "fake", "fake", b"c" * size)))

    async def say_hello(_, writer: asyncio.StreamWriter) -> None:
        writer.write(hello)
        await writer.drain()

    fake = await asyncio.start_server(say_hello, "127.0.0.1", 0)
    port = fake.sockets[0].getsockname()[1]
    transport = await open_transport(parse_target(f"127.0.0.1:{port}"))
    try:
        with pytest.raises(ProtocolError, match=f"challenge must be 32 bytes, got {size}"):
            await handshake(transport.stream, b"s" * 16, "test")
    finally:
        await transport.close()
        fake.close()


def test_an_agent_the_client_starts_has_time_to_give_up_on_nvml():
    """local and ssh:// start their agent, whose hello waits for NVML's start (up to its
    deadline, then it goes on without GPUs): the client waits longer than that."""
    assert handshake_timeout(Target("local")) == STARTED_AGENT_TIMEOUT > OPEN_DEADLINE + 5
    assert handshake_timeout(parse_target("ssh://gpu-host")) == STARTED_AGENT_TIMEOUT
    assert handshake_timeout(parse_target("gpu-host:7070")) < OPEN_DEADLINE


def run_probe(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        dltui_command("probe", *args), capture_output=True, text=True, cwd=ROOT, timeout=60
    )


def test_probe_prints_inventory_and_a_sample(agent_factory):
    agent = agent_factory()
    result = run_probe(agent.address, "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["inventory"]["hostname"] == socket.gethostname()
    assert report["inventory"]["cpu_count"] >= 1
    assert 0 <= report["sample"]["host"]["values"]["cpu"] <= 100
    text = run_probe(agent.address)
    assert text.returncode == 0 and socket.gethostname() in text.stdout and "memory" in text.stdout
    sample = text.stdout.partition("\nsample\n")[2]
    host = [line for line in sample.splitlines() if line.startswith("  host  ")]
    names = [line.split()[1] for line in host]
    assert names == [name for name in HOST_FIELDS if name in names]  # the fields' own order
    assert re.search(r"^  host  mem_total +\d+\.\d GiB  memory total$", text.stdout, re.M)
    ends = {len(line) - len(line.split("  ")[-1]) for line in host}
    assert len(ends) == 1  # every value ends in one column, its label after it


def test_probe_unreachable_and_refused(agent_factory, secret_file, tmp_path):
    free = free_port()
    result = run_probe(f"127.0.0.1:{free}")
    assert result.returncode == UNREACHABLE and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "cannot reach" in result.stderr

    agent = agent_factory("--secret-file", str(secret_file))
    wrong = tmp_path / "wrong"
    wrong.write_text("another-secret-of-enough-length")
    wrong.chmod(0o600)
    result = run_probe(agent.address, "--secret-file", str(wrong))
    assert result.returncode == 3 and "wrong secret" in result.stderr
    result = run_probe(agent.address, "--secret-file", str(secret_file))
    assert result.returncode == 0 and socket.gethostname() in result.stdout


def test_bad_arguments_are_clear_errors(secret_file):
    result = run_probe("nohost:99999")
    assert result.returncode == 2 and "port must be 1-65535" in result.stderr
    secret_file.chmod(0o644)
    result = run_probe("127.0.0.1:1", "--secret-file", str(secret_file))
    assert result.returncode == 2 and "chmod 600" in result.stderr
