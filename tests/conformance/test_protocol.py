"""A real agent process, spoken to over a real socket by a client written from
docs/protocol.md alone (tests/conformance/client.py): each test names the rule it holds the
agent to. No import from dltui: only the document, msgpack, hmac, hashlib, socket and struct.

Two agents serve the module (one with a secret, one without); the tests that stop an agent or
wait out its handshake timeout start their own.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import signal
import statistics
import struct
import time
from collections.abc import Iterator
from itertools import count, pairwise
from pathlib import Path

import msgpack
import pytest

from tests.conformance.client import C, Peer, frame, pack, read_secret
from tests.conftest import AgentProcess, start_agent

SECRET_TEXT = "  a-conformance-secret-of-enough-length \n"  # stripped before use


@pytest.fixture(scope="module")
def plain() -> Iterator[AgentProcess]:
    agent = start_agent()
    yield agent
    agent.stop()


@pytest.fixture(scope="module", autouse=True)
def silent(plain) -> Iterator[tuple[Peer, float]]:
    """A connection that never sends `auth`, opened as the module starts: the test at its end
    finds the handshake timeout run, or waits out only what is left of it."""
    peer = Peer(plain.port, timeout=C["HANDSHAKE_TIMEOUT_S"] + 15)
    yield peer, time.monotonic()
    peer.close()


@pytest.fixture(scope="module")
def secret_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("conformance") / "secret"
    path.write_text(SECRET_TEXT)
    path.chmod(0o600)
    return path


@pytest.fixture(scope="module")
def guarded(secret_path) -> Iterator[AgentProcess]:
    agent = start_agent("--secret-file", str(secret_path))
    yield agent
    agent.stop()


@pytest.fixture
def connect():
    """Open connections to an agent; every one is closed after the test."""
    peers: list[Peer] = []

    def open_peer(agent: AgentProcess) -> Peer:
        peers.append(Peer(agent.port))
        return peers[-1]

    yield open_peer
    for peer in peers:
        peer.close()


def refusal(peer: Peer) -> dict:
    """The one error an agent sends before it closes the connection."""
    error, _ = peer.receive_until("error")
    assert isinstance(error["code"], str) and isinstance(error["message"], str), error
    assert peer.rest() == [], "nothing after the error but the end of the connection"
    return error


# --- the handshake -------------------------------------------------------------------------


def test_handshake_without_a_secret(plain, connect):
    peer = connect(plain)
    welcome = peer.handshake()
    assert welcome["type"] == "welcome" and welcome["proof"] is None
    inventory = welcome["inventory"]
    assert isinstance(inventory["hostname"], str) and inventory["cpu_count"] >= 1
    assert isinstance(welcome["rate_hz"], float | int) and welcome["rate_hz"] > 0
    assert abs(welcome["wall"] - time.time()) < 60 and isinstance(welcome["mono"], float)


def test_handshake_with_the_secret_as_the_file_holds_it_stripped(guarded, connect, secret_path):
    secret = read_secret(secret_path)
    assert secret == SECRET_TEXT.strip().encode() and len(secret) >= C["MIN_SECRET_SIZE"]
    peer = connect(guarded)
    welcome = peer.handshake(secret)  # checks the agent's proof and seals the connection
    assert welcome["type"] == "welcome"
    peer.send({"type": "ping", "seq": 1, "token": 11})
    pong, _ = peer.receive_until("pong")  # sealed by the agent, checked by the client
    assert pong["token"] == 11


@pytest.mark.parametrize("secret", ["without", "with"])
@pytest.mark.parametrize("size", [0, 16, 33])
def test_a_nonce_that_is_not_32_bytes_is_refused(plain, guarded, connect, secret_path,
                                                 secret, size):  # fmt: skip
    agent, key = (guarded, read_secret(secret_path)) if secret == "with" else (plain, None)
    reply = connect(agent).handshake(key, nonce=os.urandom(size))
    assert (reply["type"], reply["code"]) == ("error", "protocol")
    assert reply["message"] == f"auth nonce must be {C['NONCE_SIZE']} bytes, got {size}"


def first_message_error(agent: AgentProcess, connect, payload: bytes) -> dict:
    peer = connect(agent)
    assert peer.receive()["type"] == "hello"
    peer.send_bytes(payload)
    return refusal(peer)


@pytest.mark.parametrize("kind", ["ping", "subscribe", "cancel", "bye"])
def test_a_first_message_of_a_known_type_but_auth_is_auth_failed(plain, connect, kind):
    """A valid message, that is: one with a missing or mistyped field is a protocol error."""
    message = {"type": kind, "seq": 1, "token": 1, "rate_hz": 10.0, "job": "j", "reason": "x"}
    error = first_message_error(plain, connect, frame(pack(message)))
    assert error["code"] == "auth_failed" and error["message"] == f"expected auth, got {kind}"


AUTH = {"type": "auth", "version": C["VERSION"], "client": "c", "nonce": b"n" * C["NONCE_SIZE"]}
"""A valid auth without a secret."""

BAD_FIRST_FRAMES = {
    "unknown type": frame(pack({"type": "exec", "cmd": "id"})),
    "not a map": frame(pack([1, 2, 3])),
    "undecodable": frame(b"\xc1"),
    "bytes after the object": frame(pack({"type": "auth"}) + b"\x00"),
    "a key that is not a string": frame(pack({"type": "auth", 1: 2})),
    "an ext type": frame(msgpack.packb(msgpack.ExtType(5, b"x"))),
    "nonce as str": frame(pack(AUTH | {"nonce": "n" * C["NONCE_SIZE"]})),
    "version as float": frame(pack(AUTH | {"version": float(C["VERSION"])})),
    "a missing field": frame(pack({k: v for k, v in AUTH.items() if k != "nonce"})),
    "longer than before auth": struct.pack(">I", C["MAX_FRAME_BEFORE_AUTH"] + 1),
}


@pytest.mark.parametrize("payload", BAD_FIRST_FRAMES.values(), ids=BAD_FIRST_FRAMES.keys())
def test_a_bad_first_frame_is_a_protocol_error(plain, connect, payload):
    assert first_message_error(plain, connect, payload)["code"] == "protocol"


def test_the_frame_limit_before_auth(plain, connect):
    error = first_message_error(plain, connect, struct.pack(">I", 1 << 20))
    assert str(C["MAX_FRAME_BEFORE_AUTH"]) in error["message"]


def test_a_wrong_version_is_auth_failed(plain, connect):
    error = first_message_error(plain, connect, frame(pack(AUTH | {"version": 1})))
    assert error["code"] == "auth_failed"
    assert error["message"] == "protocol version 1 is not supported (this agent speaks 2)"


@pytest.mark.parametrize("mac", ["wrong", "missing"])
def test_a_wrong_or_missing_mac_is_auth_failed_after_a_pause(guarded, connect, secret_path, mac):
    peer = connect(guarded)
    began = time.monotonic()
    reply = peer.handshake(b"not-the-secret-at-all" if mac == "wrong" else None)
    assert (reply["type"], reply["code"], reply["message"]) == ("error", "auth_failed",
                                                                "wrong secret")  # fmt: skip
    assert time.monotonic() - began >= 0.1  # the pause comes before the reply
    assert peer.rest() == []
    assert connect(guarded).handshake(read_secret(secret_path))["type"] == "welcome"


# --- sealed frames -------------------------------------------------------------------------


@pytest.fixture
def sealed(guarded, connect, secret_path) -> Peer:
    peer = connect(guarded)
    peer.handshake(read_secret(secret_path))
    return peer


def test_sealed_frames_both_ways_with_the_frame_number_big_endian(sealed):
    # Past frame 255 a little-endian or 32-bit number would give other tags.
    for seq in range(1, 300):
        sealed.send({"type": "ping", "seq": seq, "token": seq})
    tokens = [sealed.receive_until("pong")[0]["token"] for _ in range(299)]
    assert tokens == list(range(1, 300)) and sealed.received >= 299


def test_a_replayed_sealed_frame_fails_its_seal(sealed):
    body = pack({"type": "ping", "seq": 1, "token": 1})
    first = sealed.sealed(body)
    sealed.send_bytes(first)
    sealed.receive_until("pong")
    sealed.send_bytes(first)  # the same bytes again
    error = refusal(sealed)
    assert error["code"] == "protocol" and "authentication check" in error["message"]


def test_an_altered_sealed_frame_fails_its_seal(sealed):
    altered = bytearray(sealed.sealed(pack({"type": "ping", "seq": 1, "token": 1})))
    altered[-20] ^= 1  # a byte of the body
    sealed.send_bytes(bytes(altered))
    error = refusal(sealed)
    assert error["code"] == "protocol" and "authentication check" in error["message"]


def test_an_old_seq_in_a_new_sealed_frame_fails_the_sequence_check(sealed):
    sealed.send({"type": "ping", "seq": 7, "token": 1})
    sealed.receive_until("pong")
    sealed.send({"type": "ping", "seq": 7, "token": 2})  # correctly sealed, number 1
    error = refusal(sealed)
    assert (error["code"], error["message"]) == ("protocol", "command sequence 7 after 7: refused")


def test_a_sealed_frame_may_be_longer_by_its_tag_only(sealed):
    padded = {"type": "ping", "seq": 1, "token": 6, "padding": b"x" * 100_000}
    padded["padding"] += b"x" * (C["MAX_FRAME"] - len(pack(padded)))
    assert len(pack(padded)) == C["MAX_FRAME"]
    sealed.send(padded)
    assert sealed.receive_until("pong")[0]["token"] == 6
    sealed.send_bytes(struct.pack(">I", C["MAX_FRAME"] + C["TAG_SIZE"] + 1))
    error = refusal(sealed)
    assert error["code"] == "protocol"
    assert str(C["MAX_FRAME"] + C["TAG_SIZE"]) in error["message"]


# --- commands ------------------------------------------------------------------------------


@pytest.fixture
def client(plain, connect) -> Peer:
    peer = connect(plain)
    peer.handshake()
    return peer


def samples_spanning(peer: Peer, seconds: float) -> list[dict]:
    """Samples until they span `seconds` of the agent's monotonic clock."""
    samples = [peer.receive_until("sample")[0]]
    while samples[-1]["mono"] - samples[0]["mono"] < seconds:
        samples.append(peer.receive_until("sample")[0])
    return samples


def test_samples_as_the_document_describes_them(client):
    client.send({"type": "subscribe", "seq": 0, "rate_hz": 100})  # the first seq may be 0
    samples = samples_spanning(client, 0.5)
    for sample in samples:
        assert isinstance(sample["wall"], float) and isinstance(sample["mono"], float)
        host = sample["host"]
        assert all(isinstance(v, float | int) for v in host["values"].values())
        assert 0 <= host["values"]["cpu"] <= 100
        assert isinstance(host["cpu_per_core"], list)
        for gpu in sample["gpus"]:  # none on a machine without NVIDIA GPUs
            assert gpu["state"] in ("ok", "lost", "error")
            assert gpu["processes"] is None or isinstance(gpu["processes"], list)
    # At or above the agent's rate, every tick: seq goes up by one.
    assert [b["seq"] - a["seq"] for a, b in pairwise(samples)] == [1] * (len(samples) - 1)


def test_a_rate_between_ticks_is_kept_on_average(plain, connect):
    fastest = connect(plain)  # at the agent's rate: it samples every tick for this one
    rate = fastest.handshake()["rate_hz"]
    fastest.send({"type": "subscribe", "seq": 1, "rate_hz": rate})
    fastest.receive_until("sample")
    peer = connect(plain)
    peer.handshake()
    wanted = rate * 0.7  # 7 Hz from a 10 Hz agent
    peer.send({"type": "subscribe", "seq": 1, "rate_hz": wanted})
    samples, made = on_time_window(peer, fastest, rate)
    span = samples[-1]["mono"] - samples[0]["mono"]
    assert (len(samples) - 1) / span == pytest.approx(wanted, rel=0.15), made
    ticks = [b["seq"] - a["seq"] for a, b in pairwise(samples)]
    assert set(ticks) <= {1, 2, 3} and statistics.mean(ticks) == pytest.approx(1 / 0.7, rel=0.15)


def on_time_window(peer: Peer, fastest: Peer, rate: float) -> tuple[list[dict], list[float]]:
    """The first 3 s of `peer`'s samples in which the agent made its ticks on time (seq counts
    the ticks it made; a starved agent drops the ones it missed, and a window of those says
    nothing of how a slower subscriber's share is kept), of ten at most; and the agent's own
    rate in each window tried. `fastest`, subscribed at the agent's rate, is read as far along
    so that its samples do not pile up unread."""
    made: list[float] = []
    for _ in range(10):
        samples = samples_spanning(peer, 3.0)
        while fastest.receive_until("sample")[0]["mono"] < samples[-1]["mono"]:
            pass
        made.append(
            (samples[-1]["seq"] - samples[0]["seq"]) / (samples[-1]["mono"] - samples[0]["mono"])
        )
        if made[-1] >= 0.9 * rate:
            return samples, made
    raise AssertionError(f"the agent never made its {rate:g} ticks a second for 3 s: {made}")


def test_ping_pong(client):
    client.send({"type": "ping", "seq": 1, "token": 2**40})
    pong, _ = client.receive_until("pong")
    assert pong["token"] == 2**40 and pong["dropped"] == 0
    assert isinstance(pong["wall"], float) and isinstance(pong["mono"], float)


BAD_COMMANDS = {
    "a token that is a str": {"type": "ping", "seq": 1, "token": "1"},
    "a token that is a float": {"type": "ping", "seq": 1, "token": 1.0},
    "a seq that is a bool": {"type": "ping", "seq": True, "token": 1},
    "no seq": {"type": "ping", "token": 1},
    "a rate of 0": {"type": "subscribe", "seq": 1, "rate_hz": 0},
    "a rate over the maximum": {"type": "subscribe", "seq": 1, "rate_hz": C["MAX_RATE_HZ"] + 1},
    "a negative batch": {"type": "subscribe", "seq": 1, "rate_hz": 1.0, "batch_s": -0.5},
    "a batch over the maximum": {
        "type": "subscribe",
        "seq": 1,
        "rate_hz": 1.0,
        "batch_s": C["MAX_BATCH_S"] + 1,
    },
    "a negative seq": {"type": "ping", "seq": -1, "token": 1},
    "not a command: error": {"type": "error", "code": "protocol", "message": "x"},
    "not a command: sample": {
        "type": "sample",
        "seq": 1,
        "wall": 0.0,
        "mono": 0.0,
        "host": {"values": {}},
    },
    "not a command: auth again": AUTH,
}


@pytest.mark.parametrize("command", BAD_COMMANDS.values(), ids=BAD_COMMANDS.keys())
def test_a_bad_command_is_a_protocol_error(client, command):
    client.send(command)
    assert refusal(client)["code"] == "protocol"


def test_a_field_of_the_wrong_type_is_named_by_its_path(client):
    client.send({"type": "ping", "seq": 1, "token": "1"})
    assert refusal(client)["message"] == "ping.token: expected int, got str"


def test_a_repeated_seq_is_refused(client):
    client.send({"type": "ping", "seq": 5, "token": 1})
    client.receive_until("pong")
    client.send({"type": "ping", "seq": 5, "token": 2})
    error = refusal(client)
    assert (error["code"], error["message"]) == ("protocol", "command sequence 5 after 5: refused")


def test_unknown_fields_are_ignored(client):
    client.send({"type": "ping", "seq": 1, "token": 3, "from_the_future": [1, 2]})
    assert client.receive_until("pong")[0]["token"] == 3


def test_cancelling_no_job_is_an_error_that_keeps_the_connection(client):
    client.send({"type": "cancel", "seq": 1, "job": "no-such-job"})
    error, _ = client.receive_until("error")
    assert error["code"] == "unknown_job"
    client.send({"type": "ping", "seq": 2, "token": 4})
    assert client.receive_until("pong")[0]["token"] == 4


def test_a_bad_plan_is_refused_by_a_job_end_and_the_connection_stays(client):
    plan = {"framework": "caffe", "kinds": ["fft"]}
    client.send({"type": "run", "seq": 1, "job": "bad", "plan": plan})
    end, _ = client.receive_until("job_end")
    assert (end["job"], end["state"]) == ("bad", "refused")
    assert "caffe" in end["error"] and "fft" in end["error"]
    client.send({"type": "run", "seq": 2, "job": "neither"})  # neither plan nor models
    end, _ = client.receive_until("job_end")
    assert (end["job"], end["state"]) == ("neither", "refused")


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="the agent needs PyTorch")
def test_the_tiny_cpu_plan_runs(client):
    tiny = {"framework": "torch", "shape_set": "tiny", "kinds": ["gemm"], "device": "cpu",
            "iterations": 3, "max_seconds": 0.2}  # fmt: skip
    client.send({"type": "run", "seq": 1, "job": "tiny", "plan": tiny})
    client.sock.settimeout(120)  # the worker imports PyTorch
    end, before = client.receive_until("job_end")
    assert (end["job"], end["state"], end["error"]) == ("tiny", "done", None)
    progress = [m for m in before if m["type"] == "progress"]
    results = [m["result"] for m in before if m["type"] == "result"]
    assert progress and all(m["job"] == "tiny" for m in progress)
    assert results and progress[-1]["total"] == len(results)
    for result in results:
        assert result["kind"] == "gemm" and result["error"] is None and result["tflops"] > 0
    # Exactly one job_end: the next message about anything is a pong, not another end.
    client.send({"type": "ping", "seq": 2, "token": 5})
    _, between = client.receive_until("pong")
    assert not [m for m in between if m["type"] == "job_end"]


# --- ending --------------------------------------------------------------------------------


def test_a_clients_bye_closes_without_a_bye_back(plain, client, connect):
    client.send({"type": "subscribe", "seq": 1, "rate_hz": 10})
    client.receive_until("sample")
    client.send({"type": "bye", "reason": "done", "seq": 2})
    queued = client.rest()  # whatever was queued for it, then the end of the connection
    assert not [m for m in queued if m["type"] == "bye"]
    connect(plain).handshake()  # the agent goes on serving


def test_a_bye_without_seq_is_accepted(client):
    client.send({"type": "ping", "seq": 3, "token": 1})
    client.receive_until("pong")
    client.send({"type": "bye", "reason": "done"})
    assert [m for m in client.rest() if m["type"] != "sample"] == []


def test_the_agent_says_bye_on_sigterm(connect):
    agent = start_agent()
    try:
        peer = connect(agent)
        peer.handshake()
        seqs = count(1)
        peer.send({"type": "subscribe", "seq": next(seqs), "rate_hz": 10})
        peer.receive_until("sample")
        agent.process.send_signal(signal.SIGTERM)
        bye, _ = peer.receive_until("bye")
        assert bye["reason"] == "agent shutting down" and bye["seq"] is None
        assert peer.rest() == []
        assert agent.process.wait(timeout=15) == 0
    finally:
        agent.stop(signal.SIGKILL)


def test_this_client_knows_only_the_document():
    """The rule this package keeps: nothing from dltui, so that it tests the document."""
    for path in Path(__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            assert not [n for n in names if n.split(".")[0] == "dltui"], (path.name, names)


def test_no_auth_in_time_is_a_timeout(silent):
    peer, opened = silent
    assert peer.receive()["type"] == "hello"
    error = refusal(peer)
    assert error["code"] == "timeout"
    assert time.monotonic() - opened >= C["HANDSHAKE_TIMEOUT_S"] - 0.5
