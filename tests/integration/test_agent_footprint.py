"""What a running agent keeps out of its memory, left running on every server: OpenSSL. Its
few hashes (a client's login, its own id) run on Python's own SHA-256, and an agent that
serves no TLS loads no TLS library. Read from the agent process's own memory map."""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, dltui_command

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc maps")


def openssl_in(pid: int) -> list[str]:
    """The OpenSSL libraries (and Python's modules over them) mapped into process `pid`."""
    maps = Path(f"/proc/{pid}/maps").read_text()
    names = ("libssl", "libcrypto", "_hashlib", "_ssl")
    return sorted({line.split()[-1] for line in maps.splitlines()
                   if any(name in line for name in names)})  # fmt: skip


def test_an_agent_without_tls_maps_no_openssl_and_still_checks_secrets(agent_factory, secret_file):
    # The control: this interpreter has imported ssl, and its map shows it.
    assert ssl.OPENSSL_VERSION and openssl_in(os.getpid())
    agent = agent_factory("--secret-file", str(secret_file))
    probe = subprocess.run(dltui_command("probe", agent.address, "--secret-file", str(secret_file)),
                           capture_output=True, text=True, cwd=ROOT, timeout=60)  # fmt: skip
    assert probe.returncode == 0 and socket.gethostname() in probe.stdout  # logged in: HMAC ran
    assert openssl_in(agent.process.pid) == []
