"""Files that are not what they claim: every file dltui reads (secrets, plans, agent configs,
certificates, recordings) is refused in one line that names it, at once and without reading
more than its limit: named pipes, /dev/zero, folders, huge or sparse files, random bytes, deep
nesting, huge values. The real commands, with a bound on time and on what they print."""

from __future__ import annotations

import os
import subprocess
import time
import tracemalloc
from pathlib import Path

import pytest

from dltui.agent.config import ConfigFileError, load_config
from dltui.agent.listener import server_context
from dltui.plans.check import PlanError
from dltui.plans.files import load_plans
from dltui.recording.format import RecordingError
from dltui.recording.reader import RecordingReader
from dltui.userfiles import FileProblem, SecretFileError, load_secret
from tests.conftest import ROOT, dltui_command

LONGEST_LINE = 500
"""An error line's length, less its file's name: no bad value is quoted whole."""


@pytest.fixture
def oddities(tmp_path: Path) -> dict[str, Path]:
    """Files that claim to be a secret, a plan, a config, a certificate or a recording."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    sparse = tmp_path / "sparse"
    with open(sparse, "wb") as file:
        file.truncate(10 << 30)  # 10 GiB that take no disk: read whole, memory would run out
    sparse.chmod(0o600)  # as a secret's must be, so that its size is what is refused
    random = tmp_path / "random"
    random.write_bytes(bytes(range(256)) * 8)
    empty = tmp_path / "empty.dlrec"  # a recording as its recorder has only just created it
    empty.touch()
    return {"fifo": fifo, "zero": Path("/dev/zero"), "folder": tmp_path, "sparse": sparse,
            "random": random, "empty": empty}  # fmt: skip


LOADERS = {
    "secret": (load_secret, SecretFileError),
    "plan": (load_plans, PlanError),
    "config": (load_config, ConfigFileError),
    "certificate": (lambda path: server_context(str(path), str(path)), FileProblem),
    "recording": (RecordingReader, RecordingError),
}
EXPECTED = {
    "fifo": "is a named pipe, not a regular file",
    "zero": "is a character device, not a regular file",
    "folder": "is a folder, not a regular file",
    "sparse": "bytes, more than a",
}


@pytest.mark.parametrize("kind", sorted(EXPECTED))
@pytest.mark.parametrize("loader", sorted(LOADERS))
def test_what_is_no_regular_file_of_its_size_is_refused_unread(oddities, loader, kind):
    load, error = LOADERS[loader]
    path = oddities[kind]
    if loader == "recording" and kind == "sparse":
        pytest.skip("recordings may be large: a sparse one reads as no recording (below)")
    tracemalloc.start()
    began = time.process_time()  # the work done, whatever else shares the cores
    with pytest.raises(error) as raised:
        load(path)
    took = time.process_time() - began
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    message = str(raised.value)
    assert EXPECTED[kind] in message and str(path) in message, message
    assert "\n" not in message
    assert took < 1.0 and peak < 1 << 20, (took, peak)


def test_a_sparse_recording_reads_as_no_recording(oddities):
    with pytest.raises(RecordingError, match="no DLTUIREC magic"):
        RecordingReader(oddities["sparse"])


def test_a_secret_is_checked_for_its_mode_before_it_is_read(tmp_path):
    secret = tmp_path / "secret"
    with open(secret, "wb") as file:
        file.truncate(10 << 30)
    secret.chmod(0o644)
    with pytest.raises(SecretFileError, match=r"accessible by others \(mode 0644\)"):
        load_secret(secret)
    secret.chmod(0o600)
    with pytest.raises(SecretFileError, match="more than a secret file may be"):
        load_secret(secret)


def toml_cases() -> dict[str, str | bytes]:
    return {
        "random bytes": bytes(range(256)) * 8,
        "arrays 5,000 deep": "a = " + "[" * 5000 + "]" * 5000 + "\n",
        "inline tables 2,000 deep": "a = " + "{b = " * 2000 + "1" + "}" * 2000 + "\n",
        "a dotted header 9 deep": "[" + ".".join("k" * 9) + "]\n",
        "a 60 KB value": '[kernels]\nframework = "' + "x" * 60_000 + '"\n',
        "a 60 KB key": "[kernels]\n" + "k" * 60_000 + " = 1\n",
        "a 60 KB table declared twice": ("[" + "t" * 30_000 + "]\n") * 2,
        "7,000 unknown tables": "".join(f"[t{i}]\n" for i in range(7000)),
        "5,000 unknown kernels": '[kernels]\nkinds = ["' + '", "'.join(map(str, range(5000)))
        + '"]\n',
        "a 60 KB address": 'listen = "' + "a" * 60_000 + '"\n',
    }  # fmt: skip


@pytest.mark.parametrize("case", sorted(toml_cases()))
@pytest.mark.parametrize("loader", ["plan", "config"])
def test_bad_toml_is_one_short_line(tmp_path, loader, case):
    content = toml_cases()[case]
    path = tmp_path / "file.toml"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    load, error = LOADERS[loader]
    began = time.process_time()  # the work done, whatever else shares the cores
    with pytest.raises(error) as raised:
        load(path)
    message = str(raised.value)
    assert time.process_time() - began < 2.0
    # A file that parses is the plan's own check's to judge: it names what is wrong, not where.
    assert message.startswith((f"{loader} {path}", "unknown ")), message
    assert "\n" not in message and len(message) - len(str(path)) < LONGEST_LINE, message


COMMANDS = {
    "agent secret /dev/zero": (["agent", "--listen", "127.0.0.1:0", "--secret-file", "{zero}"],
                               "secret file /dev/zero: is a character device"),
    "agent secret fifo": (["agent", "--listen", "127.0.0.1:0", "--secret-file", "{fifo}"],
                          "is a named pipe"),
    "agent config random": (["agent", "--config", "{random}"], "not UTF-8 text"),
    "agent TLS fifo": (["agent", "--listen", "127.0.0.1:0", "--tls-cert", "{fifo}", "--tls-key",
                        "{fifo}"], "certificate {fifo}: is a named pipe"),
    "probe CA /dev/zero": (["probe", "127.0.0.1:9", "--tls-ca", "{zero}"],
                           "CA /dev/zero: is a character device"),
    "record plan random": (["record", "-o", "{folder}/x.dlrec", "--plan", "{random}"],
                           "not UTF-8 text"),
    "export fifo": (["export", "{fifo}", "-o", "{folder}/out"], "is a named pipe"),
    "report sparse": (["report", "{sparse}", "-o", "{folder}/out"], "no DLTUIREC magic"),
    "replay empty": (["replay", "{empty}"], "{empty}: an empty file: no header, no frames"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_commands_refuse_bad_files_at_once_in_one_line(oddities, name):
    args, words = COMMANDS[name]
    paths = {key: str(path) for key, path in oddities.items()}
    began = time.monotonic()
    result = subprocess.run(
        dltui_command(*(arg.format(**paths) for arg in args)),
        capture_output=True, text=True, cwd=ROOT, timeout=30,
    )  # fmt: skip
    took = time.monotonic() - began
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    said = result.stderr.strip().splitlines()  # the error, then where to read more
    assert words.format(**paths) in said[0] and len(said) <= 2, result.stderr
    assert took < 10
