"""Shared-secret authentication: an HMAC challenge-response each way, compared in constant time.

The agent sends a random challenge; the client answers with HMAC(secret, challenge + its own
nonce) and the agent proves itself with HMAC over the client's nonce. Neither side ever sends
the secret, and a recorded handshake cannot be replayed against a fresh challenge.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat

from dltui.userfiles import FileProblem, read_bounded

NONCE_SIZE = 32
MIN_SECRET_SIZE = 16
MAX_SECRET_FILE = 4096
"""A secret is a line of random bytes; a bigger file is not one (and is never read)."""


class SecretFileError(Exception):
    """The secret file is missing, not a small regular file, too short or readable by others."""


def new_nonce() -> bytes:
    return secrets.token_bytes(NONCE_SIZE)


def client_mac(secret: bytes, challenge: bytes, nonce: bytes) -> bytes:
    return hmac.new(secret, b"dltui client\0" + challenge + nonce, hashlib.sha256).digest()


def agent_proof(secret: bytes, challenge: bytes, nonce: bytes) -> bytes:
    return hmac.new(secret, b"dltui agent\0" + nonce + challenge, hashlib.sha256).digest()


def same(expected: bytes, given: bytes | None) -> bool:
    return given is not None and hmac.compare_digest(expected, given)


def load_secret(path: str | os.PathLike[str]) -> bytes:
    """Read a secret file: a small regular file that group and others cannot read, checked
    before a byte of it is read."""

    def private(status: os.stat_result) -> str | None:
        if status.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            mode = stat.S_IMODE(status.st_mode)
            return f"is accessible by others (mode {mode:04o}); run: chmod 600 {path}"
        return None

    try:
        data = read_bounded(path, "secret file", MAX_SECRET_FILE, private).strip()
    except FileProblem as exc:
        raise SecretFileError(str(exc)) from None
    if len(data) < MIN_SECRET_SIZE:
        raise SecretFileError(f"secret in {path} is shorter than {MIN_SECRET_SIZE} bytes")
    return data
