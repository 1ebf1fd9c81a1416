"""Someone on the path of a plain TCP connection with a secret: a real agent, a real client,
and a proxy between them that forwards frames and can inject, alter or replay them. Every
change closes the connection before anything is acted on."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Callable

import pytest

from dltui.client.connection import handshake
from dltui.client.target import parse_target
from dltui.client.transport import open_transport
from dltui.protocol.bench_plans import KernelPlan
from dltui.protocol.errors import ProtocolError
from dltui.protocol.framing import decode_body, encode_frame
from dltui.protocol.messages import ErrorMessage, JobEnd, Ping, Pong, Run, Sample, Subscribe
from dltui.protocol.wire import to_wire
from dltui.userfiles import load_secret
from tests.agents import connect

Tamper = Callable[[int, bytes], bytes]
"""(frame number in its direction, frame) -> the frame passed on."""

AUTHENTICATION = "failed its authentication check"


class Proxy:
    """Forwards whole frames between one client and an agent; `to_agent` and `to_client`
    may change each, and `inject` writes bytes of its own towards the agent."""

    def __init__(self, agent_port: int) -> None:
        self.agent_port = agent_port
        self.to_agent: Tamper = lambda _, frame: frame
        self.to_client: Tamper = lambda _, frame: frame
        self.sent_to_agent: list[bytes] = []
        self._upstream: asyncio.StreamWriter | None = None
        self._tasks: list[asyncio.Task] = []

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        return f"127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        agent_reader, agent_writer = await asyncio.open_connection("127.0.0.1", self.agent_port)
        self._upstream = agent_writer
        self._tasks += [
            asyncio.create_task(self._pump(reader, agent_writer, "agent")),
            asyncio.create_task(self._pump(agent_reader, writer, "client")),
        ]

    async def _pump(self, reader, writer, towards: str) -> None:
        number = 0
        try:
            while True:
                head = await reader.readexactly(4)
                frame = head + await reader.readexactly(struct.unpack(">I", head)[0])
                if towards == "agent":
                    frame = self.to_agent(number, frame)
                    self.sent_to_agent.append(frame)
                else:
                    frame = self.to_client(number, frame)
                number += 1
                writer.write(frame)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    def inject(self, data: bytes) -> None:
        assert self._upstream is not None
        self._upstream.write(data)

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        self._server.close()


@pytest.fixture
async def path(agent_factory, secret_file):
    agent = agent_factory("--secret-file", str(secret_file))
    proxy = Proxy(agent.port)
    address = await proxy.start()
    yield proxy, address, load_secret(secret_file), agent
    await proxy.stop()


async def refusal(stream) -> list:
    """What the client receives until the agent closes the connection."""
    received = []
    while True:
        try:
            received.append(await asyncio.wait_for(stream.receive(), 15))
        except EOFError:
            return received


async def test_a_command_injected_after_the_handshake_is_refused_unread(path):
    proxy, address, secret, _ = path
    client, _ = await connect(address, secret)
    forged = Run(99, "forged", KernelPlan(shape_set="no-such-set"))  # would end "refused"
    proxy.inject(encode_frame(to_wire(forged)))
    received = await refusal(client.stream)
    assert not any(isinstance(m, JobEnd) for m in received)
    error = received[-1]
    assert (
        isinstance(error, ErrorMessage)
        and error.code == "protocol"
        and AUTHENTICATION in error.message
    )
    await client.close()


async def test_a_command_replayed_whole_is_refused(path):
    proxy, address, secret, _ = path
    client, _ = await connect(address, secret)
    await client.stream.send(Ping(1, 7))
    while not isinstance(await client.stream.receive(), Pong):
        pass
    proxy.inject(proxy.sent_to_agent[-1])  # the sealed ping, byte for byte
    received = await refusal(client.stream)
    assert isinstance(received[-1], ErrorMessage) and AUTHENTICATION in received[-1].message
    await client.close()


async def test_a_sample_altered_on_the_way_is_refused_by_the_client(path):
    proxy, address, secret, _ = path

    def alter_third(number: int, frame: bytes) -> bytes:
        return frame[:-20] + bytes([frame[-20] ^ 0x01]) + frame[-19:] if number == 4 else frame

    proxy.to_client = alter_third  # hello, welcome, then samples
    client, _ = await connect(address, secret)
    await client.stream.send(Subscribe(1, 10.0))
    assert isinstance(await client.stream.receive(), Sample)
    with pytest.raises(ProtocolError, match=AUTHENTICATION):
        while True:
            await asyncio.wait_for(client.stream.receive(), 15)
    await client.close()


async def test_a_welcome_altered_on_the_way_shows_at_the_next_frame(path):
    proxy, address, secret, _ = path

    def forge_hostname(number: int, frame: bytes) -> bytes:
        if number != 1:  # the welcome
            return frame
        welcome = decode_body(frame[4:])
        welcome["inventory"]["hostname"] = "forged-host"
        return encode_frame(welcome)

    proxy.to_client = forge_hostname
    transport = await open_transport(parse_target(address))
    welcome = await handshake(transport.stream, secret, "test")
    assert welcome.inventory.hostname == "forged-host"  # the proof covers the nonces only
    await transport.stream.send(Subscribe(1, 10.0))
    with pytest.raises(ProtocolError, match=AUTHENTICATION):
        await asyncio.wait_for(transport.stream.receive(), 15)
    await transport.close()


async def test_the_agent_serves_others_after_a_tampered_connection(path):
    proxy, address, secret, agent = path
    client, _ = await connect(address, secret)
    proxy.inject(b"\x00\x00\x00\x01\xc0")
    assert AUTHENTICATION in (await refusal(client.stream))[-1].message
    direct, _ = await connect(agent.address, secret)
    await direct.stream.send(Subscribe(1, 10.0))
    assert isinstance(await asyncio.wait_for(direct.stream.receive(), 15), Sample)
    await direct.close()
    await client.close()
