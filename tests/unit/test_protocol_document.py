"""docs/protocol.md agrees with the code: every constant, every message and structure with its
fields' names, types and defaults, and the HMAC labels (by computing with them). The
conformance client in tests/conformance speaks from the document alone; this keeps the
document true."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import types
import typing
from typing import Any, Literal, Union

import pytest

from dltui import userfiles
from dltui.agent import admission, client_connection, server
from dltui.protocol import auth, framing, messages, seal
from tests.conformance.document import constants, structures

SCALARS = {int: "int", float: "float", str: "str", bytes: "bin", bool: "bool"}


def written(hint: Any) -> str:
    """A type hint as the document writes it."""
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        (inner,) = (arg for arg in typing.get_args(hint) if arg is not type(None))
        return written(inner) + "?"
    if origin is Literal:
        return "str"
    if origin is list:
        return f"[{written(typing.get_args(hint)[0])}]"
    if origin is dict:
        return f"{{str: {written(typing.get_args(hint)[1])}}}"
    if dataclasses.is_dataclass(hint):
        return hint.__name__
    return SCALARS[hint]


def documented_name(cls: type) -> str:
    return cls.TYPE if issubclass(cls, messages.Message) else cls.__name__


def reachable() -> dict[str, type]:
    """Every message type and every structure a message can hold, by its documented name."""
    found: dict[str, type] = {}

    def visit(hint: Any) -> None:
        for arg in typing.get_args(hint):
            visit(arg)
        if dataclasses.is_dataclass(hint) and documented_name(hint) not in found:
            found[documented_name(hint)] = hint
            for field_hint in typing.get_type_hints(hint).values():
                visit(field_hint)

    for cls in messages.MESSAGE_TYPES.values():
        visit(cls)
    return found


def test_the_constants_are_the_codes():
    c = constants()
    assert c["VERSION"] == messages.PROTOCOL_VERSION
    assert c["MAX_FRAME"] == framing.MAX_FRAME
    assert c["MAX_FRAME_BEFORE_AUTH"] == client_connection.MAX_FRAME_BEFORE_AUTH
    assert c["NONCE_SIZE"] == auth.NONCE_SIZE == len(auth.new_nonce())
    assert c["MIN_SECRET_SIZE"] == auth.MIN_SECRET_SIZE
    assert c["MAX_SECRET_FILE"] == userfiles.MAX_SECRET_FILE
    assert c["TAG_SIZE"] == seal.TAG_SIZE
    assert c["MAX_RATE_HZ"] == messages.MAX_RATE_HZ
    assert c["MAX_BATCH_S"] == messages.MAX_BATCH_S
    assert c["MAX_BATCH_S"] * c["MAX_RATE_HZ"] <= c["QUEUE_LIMIT"]  # a batch is never dropped
    assert c["QUEUE_LIMIT"] == client_connection.QUEUE_LIMIT
    assert c["CONTROL_LIMIT"] == client_connection.CONTROL_LIMIT
    assert c["HANDSHAKE_TIMEOUT_S"] == admission.DEADLINE < client_connection.HANDSHAKE_TIMEOUT
    assert c["LOGIN_PER_ADDRESS"] == admission.PER_SOURCE
    assert c["LOGIN_TOTAL"] == admission.TOTAL
    assert c["MAX_CONNECTIONS"] == server.MAX_CONNECTIONS


def test_the_labels_make_the_codes_macs_and_keys():
    c = constants()
    secret, challenge, nonce = b"k" * 16, b"c" * 32, b"n" * 32

    def mac(key: bytes, data: bytes) -> bytes:
        return hmac.new(key, data, hashlib.sha256).digest()

    assert auth.client_mac(secret, challenge, nonce) == mac(
        secret, c["CLIENT_MAC_LABEL"] + challenge + nonce
    )
    assert auth.agent_proof(secret, challenge, nonce) == mac(
        secret, c["AGENT_PROOF_LABEL"] + nonce + challenge
    )
    client, agent = seal.seals(secret, challenge, nonce, b"auth body", b"welcome body")
    session_key = mac(secret, c["SESSION_LABEL"] + challenge + nonce)
    keys = {
        "client": mac(session_key, c["CLIENT_KEY_LABEL"] + hashlib.sha256(b"auth body").digest()),
        "agent": mac(session_key, c["AGENT_KEY_LABEL"] + hashlib.sha256(b"welcome body").digest()),
    }
    for name, sealer in (("client", client), ("agent", agent)):
        for number, body in enumerate([b"first", b"second"]):
            frame = sealer.frame(len(body).to_bytes(4, "big") + body)
            tag = mac(keys[name], number.to_bytes(8, "big") + body)[: c["TAG_SIZE"]]
            assert frame == (len(body) + c["TAG_SIZE"]).to_bytes(4, "big") + body + tag


def test_every_message_and_structure_is_documented():
    assert sorted(structures()) == sorted(reachable())


@pytest.mark.parametrize("name", sorted(reachable()))
def test_each_tables_fields_are_the_codes(name):
    cls = reachable()[name]
    hints = typing.get_type_hints(cls)
    code = []
    for field in dataclasses.fields(cls):
        if field.default is not dataclasses.MISSING:
            default = field.default
        elif field.default_factory is not dataclasses.MISSING:
            default = field.default_factory()
        else:
            default = None
        required = field.default is field.default_factory is dataclasses.MISSING
        code.append((field.name, written(hints[field.name]), required, default))
    document = [(f.name, f.type, f.required, f.default) for f in structures()[name]]
    assert document == code
