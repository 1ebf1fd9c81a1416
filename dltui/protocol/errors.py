"""The protocol's own exceptions: every library error in decoding is mapped to one of these."""

from __future__ import annotations


class ProtocolError(Exception):
    """The peer sent something that is not a valid frame or message; the connection must close."""


class AuthError(ProtocolError):
    """The handshake failed: wrong secret, missing secret, or an unexpected message before it."""
