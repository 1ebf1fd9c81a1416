from __future__ import annotations

import struct

import msgpack
import pytest

from dltui.protocol.errors import ProtocolError
from dltui.protocol.framing import MAX_FRAME, FrameDecoder, decode_body, encode_frame

OBJECTS = [{"type": "ping", "seq": 1, "token": 7}, {"a": [1, 2.5, "x", b"\x00\xff", None]}, "s"]


def test_round_trip_many_frames_in_one_chunk():
    data = b"".join(encode_frame(obj) for obj in OBJECTS)
    assert FrameDecoder().feed(data) == OBJECTS


def test_split_at_every_boundary():
    data = b"".join(encode_frame(obj) for obj in OBJECTS)
    for cut in range(len(data) + 1):
        decoder = FrameDecoder()
        got = decoder.feed(data[:cut]) + decoder.feed(data[cut:])
        assert got == OBJECTS, cut
        assert decoder.pending == 0


def test_byte_by_byte():
    data = b"".join(encode_frame(obj) for obj in OBJECTS)
    decoder = FrameDecoder()
    got = []
    for i in range(len(data)):
        got += decoder.feed(data[i : i + 1])
    assert got == OBJECTS


def test_declared_length_over_limit_is_refused_before_the_body_arrives():
    decoder = FrameDecoder(max_frame=1024)
    with pytest.raises(ProtocolError, match="exceeds the limit"):
        decoder.feed(struct.pack(">I", 1025))
    with pytest.raises(ProtocolError):
        FrameDecoder().feed(struct.pack(">I", 0xFFFFFFFF) + b"\x00")


def test_encoder_refuses_frames_the_peer_would_refuse():
    with pytest.raises(ProtocolError):
        encode_frame(b"x" * (MAX_FRAME + 1))


@pytest.mark.parametrize(
    "body",
    [
        b"\xc1",  # never-used byte
        b"\xdd\xff\xff\xff\xff",  # array32 claiming 4 billion items, with nothing behind it
        b"\xdb\x7f\xff\xff\xff",  # str32 claiming 2 GiB
        b"\xd4\x01\x00",  # fixext: ext types are not part of the protocol
        b"\x91" * 5000 + b"\xc0",  # deep nesting
        msgpack.packb({1: 2}),  # non-string map key
        msgpack.packb(1) + msgpack.packb(2),  # two objects in one frame
        b"",
    ],
)
def test_bad_bodies_are_protocol_errors(body):
    with pytest.raises(ProtocolError):
        decode_body(body)
