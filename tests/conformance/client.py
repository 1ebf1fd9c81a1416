"""A dltui client written from docs/protocol.md alone: blocking sockets, msgpack, hmac,
hashlib and struct, with the document's own constants (read from it). It imports nothing from
dltui, so where the agent and the document part ways, this client and the tests fail."""

from __future__ import annotations

import hashlib
import hmac
import os
import socket
import struct
from pathlib import Path
from typing import Any

import msgpack

from tests.conformance.document import constants

C = constants()
LENGTH = struct.Struct(">I")  # "length: uint32, BE"


def hmac_sha256(key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, hashlib.sha256).digest()


def read_secret(path: Path) -> bytes:
    """ "The content of the secret file with ASCII whitespace stripped from both ends"."""
    return path.read_bytes().strip(b" \t\r\n\x0b\x0c")


def frame(body: bytes) -> bytes:
    return LENGTH.pack(len(body)) + body


def pack(message: dict[str, Any]) -> bytes:
    return msgpack.packb(message, use_bin_type=True)


class Closed(Exception):
    """The agent closed the connection."""


class Peer:
    """One connection to an agent; sealed once `seal` has been called."""

    def __init__(self, port: int, timeout: float = 15.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self._buffer = b""
        self._send_key: bytes | None = None
        self._receive_key: bytes | None = None
        self.sent = 0
        """Sealed frames sent: the next one's number."""
        self.received = 0

    def close(self) -> None:
        self.sock.close()

    # --- sending ---------------------------------------------------------------------------

    def sealed(self, body: bytes) -> bytes:
        """`body` as the next sealed frame: length of body and tag, body, tag."""
        assert self._send_key is not None
        tag = hmac_sha256(self._send_key, self.sent.to_bytes(8, "big") + body)[: C["TAG_SIZE"]]
        self.sent += 1
        return LENGTH.pack(len(body) + C["TAG_SIZE"]) + body + tag

    def send(self, message: dict[str, Any]) -> bytes:
        """Send one message, sealed when the connection is; its body as sent."""
        body = pack(message)
        self.sock.sendall(self.sealed(body) if self._send_key else frame(body))
        return body

    def send_bytes(self, data: bytes) -> None:
        self.sock.sendall(data)

    # --- receiving -------------------------------------------------------------------------

    def _exactly(self, size: int) -> bytes:
        while len(self._buffer) < size:
            data = self.sock.recv(65536)
            if not data:
                raise Closed(f"closed with {len(self._buffer)} of {size} bytes read")
            self._buffer += data
        data, self._buffer = self._buffer[:size], self._buffer[size:]
        return data

    def receive_body(self) -> bytes:
        (length,) = LENGTH.unpack(self._exactly(LENGTH.size))
        assert length <= C["MAX_FRAME"] + (C["TAG_SIZE"] if self._receive_key else 0), length
        data = self._exactly(length)
        if self._receive_key is None:
            return data
        body, tag = data[: -C["TAG_SIZE"]], data[-C["TAG_SIZE"] :]
        number = self.received.to_bytes(8, "big")
        expected = hmac_sha256(self._receive_key, number + body)[: C["TAG_SIZE"]]
        assert hmac.compare_digest(tag, expected), f"the agent's frame {self.received} is forged"
        self.received += 1
        return body

    def receive(self) -> dict[str, Any]:
        message = msgpack.unpackb(self.receive_body(), raw=False)
        assert isinstance(message, dict) and isinstance(message["type"], str), message
        return message

    def receive_until(self, kind: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The next message of `type` `kind`, and every message before it."""
        before = []
        while (message := self.receive())["type"] != kind:
            before.append(message)
        return message, before

    def rest(self) -> list[dict[str, Any]]:
        """Every message until the agent closes the connection (a timeout fails the test)."""
        messages = []
        while True:
            try:
                messages.append(self.receive())
            except (Closed, ConnectionResetError):
                return messages

    # --- the handshake ---------------------------------------------------------------------

    def handshake(self, secret: bytes | None = None, nonce: bytes | None = None) -> dict:
        """hello, auth, welcome; sealed from here on with a secret. Returns the welcome."""
        hello = self.receive()
        assert hello["type"] == "hello" and hello["version"] == C["VERSION"], hello
        challenge = hello["challenge"]
        nonce = os.urandom(C["NONCE_SIZE"]) if nonce is None else nonce
        mac = None
        if secret is not None:
            assert isinstance(challenge, bytes) and len(challenge) == C["NONCE_SIZE"]
            mac = hmac_sha256(secret, C["CLIENT_MAC_LABEL"] + challenge + nonce)
        auth = {"type": "auth", "version": C["VERSION"], "client": "conformance",
                "nonce": nonce, "mac": mac}  # fmt: skip
        auth_body = self.send(auth)
        welcome_body = self.receive_body()
        welcome = msgpack.unpackb(welcome_body, raw=False)
        if welcome["type"] != "welcome":
            return welcome  # an error: the caller looks at it
        if secret is not None:
            proof = hmac_sha256(secret, C["AGENT_PROOF_LABEL"] + nonce + challenge)
            assert hmac.compare_digest(welcome["proof"], proof), "the agent has not the secret"
            session = hmac_sha256(secret, C["SESSION_LABEL"] + challenge + nonce)
            self._send_key = hmac_sha256(
                session, C["CLIENT_KEY_LABEL"] + hashlib.sha256(auth_body).digest()
            )
            self._receive_key = hmac_sha256(
                session, C["AGENT_KEY_LABEL"] + hashlib.sha256(welcome_body).digest()
            )
        else:
            assert welcome["proof"] is None
        return welcome
