"""What an agent refuses: every message type before authentication (the table is built from
MESSAGE_TYPES, so a type added later is covered without anyone remembering to), commands
replayed or out of order, and a guesser, who is slowed down."""

from __future__ import annotations

import asyncio

import pytest

from dltui.protocol.bench_plans import KernelPlan
from dltui.protocol.errors import AuthError
from dltui.protocol.framing import encode_frame
from dltui.protocol.messages import (
    MESSAGE_TYPES,
    PROTOCOL_VERSION,
    Auth,
    ErrorMessage,
    JobEnd,
    Ping,
    Pong,
    Run,
    Subscribe,
)
from dltui.protocol.wire import to_wire
from dltui.userfiles import load_secret
from tests.agents import connect, next_samples, raw_exchange
from tests.conftest import start_agent
from tests.fakes.messages import example_frame


@pytest.fixture(scope="module", params=["secret", "no secret"])
def guarded(request, tmp_path_factory):
    """An agent with or without a secret, shared by the table; (agent, its secret)."""
    args: tuple[str, ...] = ()
    secret = None
    if request.param == "secret":
        path = tmp_path_factory.mktemp("secret") / "secret"
        path.write_text("a-test-secret-of-enough-length\n")
        path.chmod(0o600)
        args, secret = ("--secret-file", str(path)), load_secret(path)
    agent = start_agent(*args)
    yield agent, secret
    agent.process.kill()
    agent.process.wait()


@pytest.mark.parametrize("name", sorted(set(MESSAGE_TYPES) - {"auth"}))
async def test_every_message_type_is_refused_before_auth(guarded, name):
    agent, _ = guarded
    frames = await raw_exchange(agent.port, example_frame(name))
    assert [f["type"] for f in frames] == ["hello", "error"], frames
    assert frames[1]["code"] == "auth_failed"
    assert frames[1]["message"] == f"expected auth, got {name}"
    assert agent.process.poll() is None


async def test_the_agent_still_serves_after_the_table(guarded):
    agent, secret = guarded
    client, _ = await connect(agent.address, secret)
    await client.stream.send(Subscribe(1, 10.0))
    await next_samples(client.stream, 3)
    await client.close()


async def next_of(stream, kind):
    while not isinstance(message := await asyncio.wait_for(stream.receive(), 15), kind):
        pass
    return message


@pytest.mark.parametrize(
    ("first", "then", "words"),
    [
        (Ping(5, 1), Ping(3, 2), "command sequence 3 after 5: refused"),
        (Ping(5, 1), Ping(5, 2), "command sequence 5 after 5: refused"),
    ],
    ids=["reordered", "replayed"],
)
async def test_commands_out_of_sequence_are_refused(agent_factory, first, then, words):
    agent = agent_factory()
    client, _ = await connect(agent.address)
    await client.stream.send(first)
    assert isinstance(await next_of(client.stream, Pong), Pong)
    await client.stream.send(then)
    error = await next_of(client.stream, ErrorMessage)
    assert error.code == "protocol" and error.message == words
    with pytest.raises(EOFError):
        await client.stream.receive()
    await client.close()


async def test_a_replayed_run_runs_nothing(agent_factory):
    agent = agent_factory()
    client, _ = await connect(agent.address)
    refused = Run(2, "job-1", KernelPlan(shape_set="no-such-set"))
    await client.stream.send(refused)
    end = await next_of(client.stream, JobEnd)
    assert end.job == "job-1" and end.state == "refused"
    await client.stream.send(refused)
    error = await next_of(client.stream, ErrorMessage)
    assert "sequence 2 after 2" in error.message
    await client.close()


async def test_a_command_without_a_sequence_number_is_refused(agent_factory):
    agent = agent_factory()
    frames = await raw_exchange(
        agent.port, encode_frame(to_wire(Auth(PROTOCOL_VERSION, "t", b"n" * 32)))
        + encode_frame({"type": "ping", "token": 1})
    )  # fmt: skip
    assert [f["type"] for f in frames] == ["hello", "welcome", "error"]
    assert "seq" in frames[-1]["message"]


async def test_guessers_are_slowed_down_one_attempt_at_a_time(agent_factory, secret_file):
    agent = agent_factory("--secret-file", str(secret_file))
    loop = asyncio.get_running_loop()
    began = loop.time()

    async def wrong_guess() -> float:
        with pytest.raises(AuthError, match="wrong secret"):
            await connect(agent.address, b"a-wrong-guess-of-enough-length")
        return loop.time() - began

    # Four at once gain nothing: their turns come one after another, each failure pausing
    # 0.1, 0.2, 0.4, 0.8 s before the next.
    refused_at = sorted(await asyncio.gather(*(wrong_guess() for _ in range(4))))
    for when, floor in zip(refused_at, (0.1, 0.3, 0.7, 1.5), strict=True):
        assert when >= floor, refused_at
    client, welcome = await connect(agent.address, load_secret(secret_file))
    assert welcome.proof is not None
    await client.close()
    await wrong_guess()  # counted from one again: the right secret cleared the count
    failures = [line for line in agent.log if "authentication failed" in line]
    assert [line.rsplit("(", 1)[1] for line in failures] == [
        "1 in a row)", "2 in a row)", "3 in a row)", "4 in a row)", "1 in a row)",
    ]  # fmt: skip


async def test_a_client_of_the_unsealed_protocol_is_refused_by_version(agent_factory):
    agent = agent_factory()
    frames = await raw_exchange(agent.port, encode_frame(to_wire(Auth(1, "old", b"n" * 32))))
    assert [f["type"] for f in frames] == ["hello", "error"]
    assert frames[0]["version"] == PROTOCOL_VERSION == 2
    assert frames[1]["message"] == "protocol version 1 is not supported (this agent speaks 2)"
