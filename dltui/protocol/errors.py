"""The protocol's own exceptions: every library error in decoding is mapped to one of these."""

from __future__ import annotations

import reprlib

_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 40
_SHORT.maxlevel = 2
_SHORT.maxlist = _SHORT.maxdict = _SHORT.maxtuple = _SHORT.maxset = 4


def quote(value: object) -> str:
    """`value` as repr would show it, cut to a short prefix: an error line (or an error frame)
    never carries a bad value whole, however long or deep the value is."""
    return _SHORT.repr(value)


class ProtocolError(Exception):
    """The peer sent something that is not a valid frame or message; the connection must close."""


class AuthError(ProtocolError):
    """The handshake failed: wrong secret, missing secret, or an unexpected message before it."""
