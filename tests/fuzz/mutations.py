"""Mutations of valid inputs, the fuzzers' way to reach past a parser's first check: a valid
frame, recording or request with a few bytes changed, for hypothesis to draw from."""

from __future__ import annotations

from hypothesis import strategies as st


@st.composite
def mutated(draw: st.DrawFn, originals: list[bytes]) -> bytes:
    """A seed with a few bytes flipped, inserted, deleted, zeroed, or cut off."""
    data = bytearray(draw(st.sampled_from(originals)))
    for _ in range(draw(st.integers(1, 6))):
        position = draw(st.integers(0, max(0, len(data) - 1)))
        choice = draw(st.integers(0, 4))
        if choice == 0 and data:
            data[position] = draw(st.integers(0, 255))
        elif choice == 1:
            data[position:position] = draw(st.binary(max_size=32))
        elif choice == 2:
            del data[position : position + draw(st.integers(1, 64))]
        elif choice == 3:
            data[position : position + 4096] = bytes(min(4096, len(data) - position))
        else:
            data = data[: position + 1]
    return bytes(data)
