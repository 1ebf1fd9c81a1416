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
from pathlib import Path

NONCE_SIZE = 32
MIN_SECRET_SIZE = 16


class SecretFileError(Exception):
    """The secret file is missing, too short or readable by others."""


def new_nonce() -> bytes:
    return secrets.token_bytes(NONCE_SIZE)


def client_mac(secret: bytes, challenge: bytes, nonce: bytes) -> bytes:
    return hmac.new(secret, b"dltui client\0" + challenge + nonce, hashlib.sha256).digest()


def agent_proof(secret: bytes, challenge: bytes, nonce: bytes) -> bytes:
    return hmac.new(secret, b"dltui agent\0" + nonce + challenge, hashlib.sha256).digest()


def same(expected: bytes, given: bytes | None) -> bool:
    return given is not None and hmac.compare_digest(expected, given)


def load_secret(path: str | os.PathLike[str]) -> bytes:
    """Read a secret file, refusing one that group or others can read."""
    path = Path(path)
    try:
        mode = path.stat().st_mode
        data = path.read_bytes().strip()
    except OSError as exc:
        raise SecretFileError(f"cannot read secret file {path}: {exc.strerror}") from exc
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise SecretFileError(
            f"secret file {path} is accessible by others (mode {stat.S_IMODE(mode):04o}); "
            f"run: chmod 600 {path}"
        )
    if len(data) < MIN_SECRET_SIZE:
        raise SecretFileError(f"secret in {path} is shorter than {MIN_SECRET_SIZE} bytes")
    return data
