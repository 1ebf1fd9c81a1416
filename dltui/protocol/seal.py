"""Frames that prove where they came from, after a handshake with a secret.

Over plain TCP the HMAC handshake proves who is at each end, but not that the bytes after it
are theirs. Sealed, every later frame carries a tag, so a frame injected, altered, dropped,
repeated or moved closes the connection instead of being acted on:

    sealed frame = length u32 (of body and tag) | body | tag
    tag          = HMAC-SHA256(the sender's key, frame number u64 | body), its first 16 bytes

Frames are numbered from 0 in each direction and the number is never sent: a frame out of
place fails like a forged one. Each direction has its own key, made from the secret, both
nonces and the handshake frame its sender sent (the client's auth, the agent's welcome), so a
handshake frame altered on the way shows at the first sealed frame after it.
"""

from __future__ import annotations

import hashlib
import hmac
import struct

from dltui.protocol.errors import ProtocolError
from dltui.protocol.framing import HEADER_SIZE

TAG_SIZE = 16
_LENGTH = struct.Struct(">I")


class Seal:
    """One direction of one connection: tags the frames sent, or checks the frames received."""

    def __init__(self, key: bytes) -> None:
        self._mac = hmac.new(key, digestmod=hashlib.sha256)
        self._number = 0

    def _tag(self, body: bytes | memoryview) -> bytes:
        mac = self._mac.copy()
        mac.update(self._number.to_bytes(8, "big"))
        mac.update(body)
        self._number += 1
        return mac.digest()[:TAG_SIZE]

    def frame(self, frame: bytes) -> bytes:
        """An encoded frame (length and body), sealed."""
        body = memoryview(frame)[HEADER_SIZE:]
        return _LENGTH.pack(len(body) + TAG_SIZE) + body + self._tag(body)

    def open(self, sealed: bytes) -> bytes:
        """A sealed frame's body, once its tag checks out; ProtocolError when it does not."""
        if len(sealed) < TAG_SIZE:
            raise ProtocolError("a frame failed its authentication check: too short for a tag")
        body, tag = sealed[:-TAG_SIZE], sealed[-TAG_SIZE:]
        if not hmac.compare_digest(self._tag(body), tag):
            raise ProtocolError(
                "a frame failed its authentication check: altered, injected or out of order"
            )
        return body


def seals(
    secret: bytes, challenge: bytes, nonce: bytes, auth_body: bytes, welcome_body: bytes
) -> tuple[Seal, Seal]:
    """(the client's seal, the agent's seal) for a connection whose handshake was these."""
    session = hmac.new(secret, b"dltui session\0" + challenge + nonce, hashlib.sha256).digest()

    def key(sender: bytes, handshake_body: bytes) -> bytes:
        bound = sender + hashlib.sha256(handshake_body).digest()
        return hmac.new(session, bound, hashlib.sha256).digest()

    return Seal(key(b"client\0", auth_body)), Seal(key(b"agent\0", welcome_body))
