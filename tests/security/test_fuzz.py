"""Fuzzing with hypothesis: random, mutated and adversarial bytes at the client's decoder, the
recording reader, a real agent and its metrics port. Nothing may crash, raise anything but the
project's own errors, allocate what a header asks for, or stop the agent serving its other
clients."""

from __future__ import annotations

import errno
import itertools
import socket
import struct
import threading
import time
import tracemalloc
import urllib.parse

import msgpack
import psutil
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dltui.protocol.errors import ProtocolError
from dltui.protocol.framing import MAX_FRAME, FrameDecoder, encode_frame
from dltui.protocol.messages import MESSAGE_TYPES, PROTOCOL_VERSION, Auth, Message, Subscribe
from dltui.protocol.wire import from_wire, to_wire
from dltui.recording.format import RecordingError
from dltui.recording.reader import RecordingReader
from tests.conftest import ROOT, wait_for
from tests.fakes.messages import example_frame
from tests.fuzz.mutations import mutated

FUZZ = settings(
    max_examples=200,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

VALID_FRAMES = [example_frame(name) for name in sorted(MESSAGE_TYPES)]
AUTH = encode_frame(to_wire(Auth(PROTOCOL_VERSION, "fuzz", b"n" * 32)))


def frame(body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + body


ADVERSARIAL = [
    struct.pack(">I", 0xFFFFFFFF),  # a length of 4 GiB
    struct.pack(">I", MAX_FRAME + 1) + b"x" * 64,
    frame(b"\xdd\xff\xff\xff\xff"),  # array32 of 4 billion items, in a 5-byte body
    frame(b"\xdd\xff\xff\xff\xff\xc0"),
    frame(b"\xdf\xff\xff\xff\xff"),  # map32
    frame(b"\xdb\xff\xff\xff\xff"),  # str32 of 4 GiB
    frame(b"\xc6\xff\xff\xff\xff"),  # bin32
    frame(b"\x91" * 100_000 + b"\xc0"),  # nested 100,000 deep
    frame(msgpack.packb({"type": "ping", "seq": 1, "token": 1, "x": [[[[[[[[[[1]]]]]]]]]]})),
    frame(msgpack.packb({"type": "sample", "seq": "one"})),
    frame(msgpack.packb({"type": "\u0000" * 1000})),
    frame(msgpack.packb({"type": "run", "seq": 2, "job": "j" * 900_000, "plan": {}})),
    frame(msgpack.packb({1: 2})),
    frame(msgpack.packb(msgpack.ExtType(1, b"x"))),
    frame(msgpack.packb(-1)),
    frame(b"\xc1"),  # never used in msgpack
]


msgpack_ints = st.integers(-(2**63), 2**64 - 1)
wire_values = st.recursive(
    st.none() | st.booleans() | msgpack_ints | st.floats() | st.text(max_size=50)
    | st.binary(max_size=50),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=10), inner,
                                                                 max_size=5),
    max_leaves=30,
)  # fmt: skip
typed_maps = st.builds(
    lambda kind, fields: {**fields, "type": kind},
    st.sampled_from([*MESSAGE_TYPES, "exec", "", "hello "]),
    st.dictionaries(st.sampled_from(["seq", "token", "job", "plan", "values", "host", "gpus",
                                     "wall", "mono", "rate_hz", "inventory", "x"]),
                    wire_values, max_size=6),
)  # fmt: skip

bytes_in = (
    st.binary(max_size=2048)
    | mutated(VALID_FRAMES)
    | st.sampled_from(ADVERSARIAL)
    | typed_maps.map(lambda m: frame(msgpack.packb(m, use_bin_type=True)))
)


def decode_all(data: bytes, pieces: int) -> list[Message]:
    """Feed bytes in `pieces` parts; every message the frames make, or ProtocolError."""
    decoder = FrameDecoder()
    size = max(1, len(data) // pieces)
    messages = []
    for start in range(0, len(data), size):
        messages += [from_wire(obj) for obj in decoder.feed(data[start : start + size])]
    return messages


@FUZZ
@given(data=bytes_in, pieces=st.integers(1, 7))
def test_the_decoder_only_ever_raises_protocol_errors(data, pieces):
    try:
        messages = decode_all(data, pieces)
    except ProtocolError:
        return
    assert all(isinstance(m, Message) for m in messages)


@pytest.mark.parametrize("data", ADVERSARIAL[:8], ids=lambda d: d[:6].hex())
def test_a_header_never_makes_the_decoder_allocate_what_it_asks_for(data):
    tracemalloc.start()
    try:
        with pytest.raises(ProtocolError):
            decode_all(data + b"\x00" * 16, 1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * len(data) + (1 << 20), peak


FIXTURE = ROOT / "tests" / "fixtures" / "cpu-kernels.dlrec"


@pytest.fixture(scope="module")
def recording_start() -> bytes:
    return FIXTURE.read_bytes()[:60_000]


@FUZZ
@given(data=st.data())
def test_the_recording_reader_keeps_what_checks_out(tmp_path_factory, recording_start, data):
    garbage_after_header = st.binary(max_size=4096).map(lambda b: recording_start[:900] + b)
    content = data.draw(mutated([recording_start]) | garbage_after_header)
    path = tmp_path_factory.mktemp("fuzz") / "f.dlrec"
    path.write_bytes(content)
    try:
        reader = RecordingReader(path)
    except RecordingError:
        return
    records = reader.read_all()
    assert all(isinstance(r.message, Message) for r in records)
    assert all(d.offset >= 0 and d.reason for d in reader.damage)


class Bystander(threading.Thread):
    """An authenticated client reading samples all through the fuzzing."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.decoder = FrameDecoder()
        self.arrivals: list[tuple[float, int]] = []
        self.sock.sendall(AUTH + encode_frame(to_wire(Subscribe(1, 10.0))))

    def run(self) -> None:
        while data := self.sock.recv(65536):
            for obj in self.decoder.feed(data):
                if obj.get("type") == "sample":
                    self.arrivals.append((time.monotonic(), obj["seq"]))


def throw(port: int, payload: bytes) -> None:
    """Send bytes, say we are done, and read until the agent closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=15) as sock:
        try:
            sock.sendall(payload)
            sock.shutdown(socket.SHUT_WR)
            while sock.recv(65536):
                pass
        except OSError as exc:  # the agent closed on us mid-send: an answer too
            if not isinstance(exc, ConnectionError) and exc.errno != errno.ENOTCONN:
                raise  # (ENOTCONN: shut down after the agent's reset already ended it)


@pytest.fixture(scope="module")
def fuzzed_agent():
    from tests.conftest import start_agent

    agent = start_agent()
    bystander = Bystander(agent.port)
    bystander.start()
    yield agent, bystander
    agent.process.kill()
    agent.process.wait()


@FUZZ
@given(payload=bytes_in, authenticated=st.booleans())
def test_a_real_agent_survives_and_serves_the_others(fuzzed_agent, payload, authenticated):
    agent, _ = fuzzed_agent
    throw(agent.port, (AUTH if authenticated else b"") + payload)
    assert agent.process.poll() is None, "\n".join(agent.log[-20:])


def test_after_the_fuzzing_memory_is_flat_and_the_bystander_was_served(fuzzed_agent):
    agent, bystander = fuzzed_agent
    rss = psutil.Process(agent.process.pid).memory_info().rss
    for payload in ADVERSARIAL * 5:
        throw(agent.port, payload)
    assert psutil.Process(agent.process.pid).memory_info().rss - rss < 16 << 20
    seen = len(bystander.arrivals)
    wait_for(lambda: len(bystander.arrivals) >= seen + 10, what="the bystander's next samples")
    arrivals = list(bystander.arrivals)
    seqs = [seq for _, seq in arrivals]
    assert len(seqs) > 10 and seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    gaps = [b - a for (a, _), (b, _) in itertools.pairwise(arrivals)]
    # A payload that held the agent's loop (a blocking read, a huge allocation) would stall
    # every client for seconds; a loaded test machine delays a 10 Hz sample by a second at times.
    assert max(gaps) < 3.0, max(gaps)
    assert not any("Traceback" in line for line in agent.log), "\n".join(agent.log)


# The metrics port is served on the same event loop as the clients: what reaches it must not
# stall them either.
HTTP_REQUESTS = [
    b"GET /metrics HTTP/1.1\r\nHost: agent\r\nAccept: application/openmetrics-text\r\n\r\n",
    b"GET /metrics HTTP/1.0\r\n\r\n",
    b"HEAD /metrics HTTP/1.1\r\nHost: agent\r\nConnection: close\r\n\r\n",
    b"POST /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    b"GET /metrics HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999\r\n\r\nxyz",
    b"GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n" * 50,  # pipelined
    b"GET /" + b"m" * 20_000 + b" HTTP/1.1\r\n\r\n",  # past the request limit
    b"GET /metrics HTTP/1.1\r\n" + b"X: y\r\n" * 5_000 + b"\r\n",
]
http_in = mutated(HTTP_REQUESTS) | st.binary(max_size=2_000)


@pytest.fixture(scope="module")
def fuzzed_metrics():
    """The fuzzed agent's metrics port: a second agent, with --metrics, and its bystander."""
    from tests.agents import metrics_url
    from tests.conftest import start_agent

    agent = start_agent("--metrics", "127.0.0.1:0")
    bystander = Bystander(agent.port)
    bystander.start()
    port = urllib.parse.urlsplit(metrics_url(agent)).port
    yield agent, bystander, port
    agent.process.kill()
    agent.process.wait()


@FUZZ
@given(payload=http_in)
def test_the_metrics_port_survives_what_reaches_it(fuzzed_metrics, payload):
    agent, _, port = fuzzed_metrics
    throw(port, payload)
    assert agent.process.poll() is None, "\n".join(agent.log[-20:])


def test_after_the_metrics_fuzzing_scrapes_and_the_bystander_are_served(fuzzed_metrics):
    from tests.agents import metrics_url, pick, scrape

    agent, bystander, _ = fuzzed_metrics
    assert pick(scrape(metrics_url(agent))[0], "dltui_agent_info")
    seen = len(bystander.arrivals)
    wait_for(lambda: len(bystander.arrivals) >= seen + 10, what="the bystander's next samples")
    gaps = [b - a for (a, _), (b, _) in itertools.pairwise(bystander.arrivals)]
    assert max(gaps) < 3.0, max(gaps)  # as above: a held loop would stall it for seconds
    assert not any("Traceback" in line for line in agent.log), "\n".join(agent.log)
