"""Fuzz targets for every file dltui reads, with the strategies that feed them.

Each target writes what it is given to a file and hands it to the parser the command line uses.
A finding is anything but the parser's own error, an error that is not one line, or one that
quotes more than a short prefix of what it was given. tests/fuzz/test_file_parsers.py runs
each for a few seconds in the suite; benchmarks/fuzz_files.py runs them for as long as asked.
"""

from __future__ import annotations

import atexit
import os
import shutil
import ssl
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from dltui.agent.config import ConfigFileError, load_config
from dltui.agent.listener import server_context
from dltui.client.target import TlsOptions
from dltui.client.tls import client_context
from dltui.plans.check import PlanError
from dltui.plans.files import load_plans
from dltui.protocol.messages import ConnectionState, Message, Ping, Sample
from dltui.protocol.samples import HostSample
from dltui.recording.format import Header, Record, RecordingError, encode_header, encode_record
from dltui.recording.reader import RecordingReader
from dltui.recording.timeline import Timeline
from dltui.recording.writer import RecordingWriter
from dltui.userfiles import SecretFileError, load_secret
from tests.fuzz.mutations import mutated

LONGEST = 600
"""An error line's length beyond the file's own name."""
WORKDIR = Path(tempfile.mkdtemp(prefix="dltui-fuzz-"))
atexit.register(shutil.rmtree, WORKDIR, ignore_errors=True)


def checked_error(error: BaseException, path: Path | str) -> None:
    """A finding unless the message is one short line."""
    message = str(error)
    assert "\n" not in message, message[:400]
    assert len(message) - len(str(path)) <= LONGEST, message[:400]


def expect(errors: tuple[type[BaseException], ...], call: Callable[[], Any], path: Path | str):
    """`call()`, which may raise only `errors`, in one short line."""
    try:
        return call()
    except errors as exc:
        checked_error(exc, path)
        return None


def _file(name: str, data: bytes, mode: int = 0o600) -> Path:
    path = WORKDIR / name
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "wb") as file:
        file.write(data)
    os.chmod(path, mode)
    return path


def plan_toml(data: bytes) -> None:
    path = _file("plan.toml", data)
    expect((PlanError,), lambda: load_plans(path), path)


def agent_config(data: bytes) -> None:
    path = _file("agent.toml", data)
    expect((ConfigFileError,), lambda: load_config(path), path)


def secret(data: bytes, mode: int) -> None:
    path = _file("secret", data, mode)
    found = expect((SecretFileError,), lambda: load_secret(path), path)
    if found is not None:
        assert len(found) >= 16 and mode & 0o077 == 0 and found == found.strip()


def recording(data: bytes) -> None:
    """Any version: the reader, then the replay's timeline over the same bytes."""
    path = _file("fuzz.dlrec", data)
    reader = expect((RecordingError,), lambda: RecordingReader(path), path)
    if reader is None:
        return
    records = reader.read_all()
    assert all(isinstance(record.message, Message) for record in records)
    if (line := reader.damage_report()) is not None:
        checked_error(ValueError(line), path)
    timeline = Timeline(path)
    for index in range(len(timeline.stretches)):
        timeline.state(index)
    list(timeline.records(0))


def certificate_path(path: str, data: bytes) -> None:
    """A path as a config file or a command line could name it (any text), to a file holding
    anything: both sides' TLS set-up refuse it with an OSError or an SSLError, in one line."""
    target = _file("cert.pem", data)
    named = path.replace("{file}", str(target))
    expect((OSError, ssl.SSLError), lambda: server_context(named, named, named), named)
    options = TlsOptions(named, named, named)
    expect((OSError, ssl.SSLError), lambda: client_context(options), named)


# --- what to feed them --------------------------------------------------------------------

toml_text = st.one_of(
    st.binary(max_size=2048),
    st.text(max_size=512).map(str.encode),
    st.lists(st.sampled_from(
        ["[kernels]", "[models]", "[x]", "[[a]]", "kinds = [", "]", "{", "}", '"gemm"', ",",
         "set = ", "framework = ", "models = ", "data_dir = ", "gpus = [1, 2]", "listen = ",
         "rate = 1e9", "stdio = true", "data_dirs = [", "'/d'", "[", "x" * 5000, "\\u0000",
         "=", "\n", "a.b.c.d.e.f.g.h.i.j = 1", "inf", "nan", "-0", "0x7fffffffffffffff"]
    ), max_size=60).map(lambda parts: " ".join(parts).encode()),
)  # fmt: skip
secret_modes = st.sampled_from([0o600, 0o400, 0o640, 0o604, 0o666, 0o700])


def _seed_recordings() -> list[bytes]:
    """Small real recordings to mutate: version 2 as dltui writes it, and version 1."""
    messages: list[Message] = [ConnectionState("live", 1.7e9)]
    for tick in range(60):
        host = HostSample({"cpu": float(tick % 7)}, [1.0, 2.0])
        messages.append(Sample(tick, 1.7e9 + tick / 10, tick / 10, host))
        if tick % 10 == 0:
            messages.append(Ping(tick + 1, tick))
    path = WORKDIR / "seed.dlrec"
    path.unlink(missing_ok=True)
    writer = RecordingWriter(path, Header("fuzz", 1.7e9, {"a": "a"}))
    for index, message in enumerate(messages):
        writer.write("a", message, received=1.7e9 + index * 0.2)  # several chunks, 2 stretches
    writer.close()
    version_1 = encode_header(Header("fuzz", 1.7e9), version=1) + b"".join(
        encode_record(Record(1.7e9 + i, "a", m)) for i, m in enumerate(messages)
    )
    return [path.read_bytes(), version_1]


SEEDS = _seed_recordings()


V2, V1 = SEEDS
V1_HEADER = encode_header(Header("fuzz", 1.7e9), version=1)
recordings_v1 = st.one_of(
    mutated([V1]), st.binary(max_size=1024).map(lambda tail: V1_HEADER + tail)
)
recordings_v2 = st.one_of(
    mutated([V2]),
    st.binary(max_size=1024).map(lambda tail: V2[: len(V1_HEADER)] + tail),
    st.binary(max_size=256),
)
paths = st.one_of(
    st.just("{file}"),
    st.text(max_size=64),
    st.sampled_from(["/dev/zero", "/dev/null", "/", "{file}\x00.pem", "x" * 5000, "",
                     "/proc/self/fd/0", "{file}/child"]),
)  # fmt: skip
pem_bytes = st.one_of(
    st.binary(max_size=512),
    st.binary(max_size=256).map(lambda b: b"-----BEGIN CERTIFICATE-----\n" + b + b"\n-----END"),
)

TARGETS: dict[str, tuple[Callable[..., None], dict[str, st.SearchStrategy[Any]]]] = {
    "plan_toml": (plan_toml, {"data": toml_text}),
    "agent_config": (agent_config, {"data": toml_text}),
    "secret": (secret, {"data": st.binary(max_size=64) | st.binary(max_size=8192),
                        "mode": secret_modes}),
    "recording_v1": (recording, {"data": recordings_v1}),
    "recording_v2": (recording, {"data": recordings_v2}),
    "certificate_path": (certificate_path, {"path": paths, "data": pem_bytes}),
}  # fmt: skip
"""name → (target, its arguments' strategies)."""
