"""Bad input closes that one connection with a clear error; other clients go on being served."""

from __future__ import annotations

import asyncio
import os
import socket
import struct
import subprocess
from errno import EADDRINUSE

import msgpack
import pytest

from dltui.agent.job_folders import PREFIX
from dltui.protocol.framing import encode_frame
from dltui.protocol.messages import PROTOCOL_VERSION, Auth, Sample, Subscribe
from dltui.protocol.wire import to_wire
from tests.agents import connect, raw_exchange
from tests.conftest import ROOT, dltui_command, start_agent


def auth_frame() -> bytes:
    return encode_frame(to_wire(Auth(PROTOCOL_VERSION, "fuzz", b"n" * 32)))


BAD_INPUTS = {
    "garbage": [b"\x00\x00\x00\x04\xc1\xc1\xc1\xc1"],
    "huge declared length": [struct.pack(">I", 0xFFFFFFF0)],
    "array32 header": [struct.pack(">I", 5) + b"\xdd\xff\xff\xff\xff"],
    "not a map": [encode_frame([1, 2, 3])],
    "unknown type": [encode_frame({"type": "exec", "cmd": "id"})],
    "command before auth": [encode_frame(to_wire(Subscribe(1, 10.0)))],
    "wrong field type": [auth_frame(), encode_frame({"type": "subscribe", "seq": "x"})],
    "absurd rate": [auth_frame(), encode_frame(to_wire(Subscribe(1, 1e9)))],
    "agent-only message": [auth_frame(), encode_frame({"type": "welcome"})],
    "ext type": [auth_frame(), encode_frame(msgpack.ExtType(5, b"x"))],
}


@pytest.fixture(scope="module")
def agent():
    """One agent for the table: bad input closes a connection, it changes nothing else."""
    agent = start_agent("--rate", "20")
    yield agent
    agent.stop()


async def next_samples(stream, count: int) -> list[Sample]:
    samples: list[Sample] = []
    while len(samples) < count:
        if isinstance(message := await asyncio.wait_for(stream.receive(), 10), Sample):
            samples.append(message)
    return samples


@pytest.mark.parametrize("payloads", BAD_INPUTS.values(), ids=BAD_INPUTS.keys())
async def test_bad_input_gets_an_error_and_a_closed_connection(agent, payloads):
    bystander, _ = await connect(agent.address)
    await bystander.stream.send(Subscribe(1, 20.0))
    await next_samples(bystander.stream, 2)

    frames = await raw_exchange(agent.port, *payloads)
    errors = [f for f in frames if f.get("type") == "error"]
    assert len(errors) == 1, frames
    assert errors[0]["code"] in {"protocol", "auth_failed"} and errors[0]["message"]
    authenticated = payloads[0] == auth_frame()
    assert [f["type"] for f in frames if f["type"] != "hello"] == (
        ["welcome", "error"] if authenticated else ["error"]
    )

    # The bystander's stream goes on, every tick of it.
    after = await next_samples(bystander.stream, 5)
    assert [s.seq for s in after] == list(range(after[0].seq, after[0].seq + 5))
    assert agent.process.poll() is None
    await bystander.close()


@pytest.mark.parametrize("stdin", ["/dev/null", "pyproject.toml"])
def test_an_agent_on_stdio_without_a_pipe_says_so_before_it_does_anything(stdin, tmp_path):
    # A job folder an agent of an earlier boot left: one that starts for real removes it.
    left = tmp_path / f"{PREFIX}1-1-00000000-{os.stat('/proc/self/ns/pid').st_ino}-abcd1234"
    left.mkdir()
    with open(ROOT / stdin, "rb") as source:  # an absolute path stays itself
        done = subprocess.run(dltui_command("agent", "--stdio"), stdin=source, cwd=ROOT,
                              env={**os.environ, "TMPDIR": str(tmp_path)},
                              capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 2
    first = done.stderr.strip().splitlines()[0]  # the error, then where to read more
    assert first.endswith("--stdio serves one client over a pipe (a local spawn, "
                          "or ssh), and stdin is not one")  # fmt: skip
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert left.is_dir()  # refused before it swept anything


def test_an_agent_that_cannot_listen_says_why_in_one_line(secret_file):
    def refusal(address: str) -> str:
        done = subprocess.run(dltui_command("agent", "--listen", address, "--secret-file",
                                            str(secret_file)),
                              cwd=ROOT, capture_output=True, text=True, timeout=60)  # fmt: skip
        assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr
        [line] = [line for line in done.stderr.splitlines() if "cannot listen" in line]
        return line

    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        in_use = refusal(f"127.0.0.1:{port}")
    # The system's words, once: the address is said as the user wrote it, not again as a tuple.
    assert in_use == f"dltui agent: cannot listen on 127.0.0.1:{port}: {os.strerror(EADDRINUSE)}"
    unknown = refusal("nowhere.invalid:7070")  # getaddrinfo's error, whose errno is its own
    assert unknown.startswith("dltui agent: cannot listen on nowhere.invalid:7070: ")
    assert "Unknown error" not in unknown
