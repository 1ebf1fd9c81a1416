"""Shared-secret authentication: an HMAC challenge-response each way, compared in constant time.

The agent sends a random challenge; the client answers with HMAC(secret, challenge + its own
nonce) and the agent proves itself with HMAC over the client's nonce. Neither side ever sends
the secret, and a recorded handshake cannot be replayed against a fresh challenge.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

NONCE_SIZE = 32
MIN_SECRET_SIZE = 16
"""A shared secret's least length in bytes (dltui.userfiles.load_secret reads it from a file)."""


def new_nonce() -> bytes:
    return secrets.token_bytes(NONCE_SIZE)


def client_mac(secret: bytes, challenge: bytes, nonce: bytes) -> bytes:
    return hmac.new(secret, b"dltui client\0" + challenge + nonce, hashlib.sha256).digest()


def agent_proof(secret: bytes, challenge: bytes, nonce: bytes) -> bytes:
    return hmac.new(secret, b"dltui agent\0" + nonce + challenge, hashlib.sha256).digest()


def same(expected: bytes, given: bytes | None) -> bool:
    return given is not None and hmac.compare_digest(expected, given)
