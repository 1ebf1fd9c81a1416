"""Sealed frames (protocol/seal.py): what one side seals the other opens, split anywhere; a
byte changed anywhere, a frame dropped, repeated or sent the other way, or a handshake frame
altered, fails the check."""

from __future__ import annotations

import pytest

from dltui.protocol.errors import ProtocolError
from dltui.protocol.framing import FrameDecoder, encode_frame
from dltui.protocol.seal import TAG_SIZE, seals

SECRET, CHALLENGE, NONCE = b"s" * 32, b"c" * 32, b"n" * 32
FRAMES = [encode_frame({"type": "ping", "seq": n, "token": n}) for n in range(1, 4)]


def pair(auth_body: bytes = b"auth", welcome_body: bytes = b"welcome"):
    """(the client's seal, the agent's seal), as each end of one connection makes them."""
    return seals(SECRET, CHALLENGE, NONCE, auth_body, welcome_body)


def receiver(opener) -> FrameDecoder:
    decoder = FrameDecoder()
    decoder.opener, decoder.overhead = opener.open, TAG_SIZE
    return decoder


def sealed_stream() -> bytes:
    client, _ = pair()
    return b"".join(client.frame(frame) for frame in FRAMES)


def test_sealed_frames_open_at_the_other_end_however_the_bytes_are_split():
    data = sealed_stream()
    for cut in range(len(data) + 1):
        decoder = receiver(pair()[0])
        got = decoder.feed(data[:cut]) + decoder.feed(data[cut:])
        assert [message["seq"] for message in got] == [1, 2, 3], cut


def test_a_byte_changed_anywhere_fails_the_check():
    data = sealed_stream()
    first = len(FRAMES[0]) + TAG_SIZE
    for position in range(4, first):  # past the length: the body and the tag of frame 1
        altered = bytearray(data)
        altered[position] ^= 0x01
        with pytest.raises(ProtocolError, match="failed its authentication check"):
            receiver(pair()[0]).feed(bytes(altered))


def test_a_frame_dropped_repeated_or_reflected_fails_the_check():
    client, agent = pair()
    one, two = client.frame(FRAMES[0]), client.frame(FRAMES[1])
    for stream in (two, one + one):  # the first dropped; the first again
        decoder = receiver(pair()[0])
        with pytest.raises(ProtocolError, match="out of order"):
            decoder.feed(stream)
    # A frame the agent sealed, sent back to it as the client's.
    reflected = agent.frame(FRAMES[0])
    with pytest.raises(ProtocolError):
        receiver(pair()[0]).feed(reflected)


@pytest.mark.parametrize("altered", ["auth", "welcome"])
def test_keys_are_bound_to_the_handshake_each_side_saw(altered):
    sender = pair()[0] if altered == "auth" else pair()[1]
    other = {"auth_body": b"auth", "welcome_body": b"welcome"} | {f"{altered}_body": b"forged"}
    seen = pair(**other)
    opener = seen[0] if altered == "auth" else seen[1]
    with pytest.raises(ProtocolError):
        receiver(opener).feed(sender.frame(FRAMES[0]))


def test_a_sealed_frame_may_exceed_the_limit_by_its_tag_only():
    decoder = receiver(pair()[0])
    decoder.max_frame = len(FRAMES[0]) - 4
    assert decoder.feed(pair()[0].frame(FRAMES[0]))[0]["seq"] == 1
    decoder.max_frame -= 1
    with pytest.raises(ProtocolError, match="exceeds the limit"):
        decoder.feed(pair()[0].frame(FRAMES[0])[:8])
