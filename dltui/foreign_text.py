"""Foreign text: what an agent, a recording, /proc or NVML says, made safe to show.

A name is data, never markup or a terminal command. Every printer, widget and report writer
passes such text through `shown`, or a whole message through `clean`: bytes are decoded with
replacement, text that cannot be encoded (lone surrogates from /proc's bytes) is replaced,
control characters and escape sequences are made visible (ESC as `\\x1b`), and the length is
bounded. Markup is the widgets' part: foreign text reaches Textual as `Content` or Rich `Text`,
never as markup. Pure, so the agent and every client side may use it; headless.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar, cast

T = TypeVar("T")

LIMIT = 256
"""Characters kept of one piece of foreign text: names, models, messages."""
ELLIPSIS = "…"

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def decoded(text: str | bytes) -> str:
    """Text that is valid Unicode: bytes decoded as UTF-8, lone surrogates (psutil's
    surrogate-escaped bytes from /proc) decoded back the same way; nothing else changed."""
    if isinstance(text, bytes):
        return text.decode("utf-8", errors="replace")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raw = text.encode("utf-8", errors="surrogateescape" if _escaped_only(text) else "replace")
        return raw.decode("utf-8", errors="replace")
    return text


def _escaped_only(text: str) -> bool:
    """Whether every surrogate is one of surrogateescape's (U+DC80..U+DCFF, one per byte)."""
    return all(not 0xD800 <= ord(char) <= 0xDFFF or 0xDC80 <= ord(char) <= 0xDCFF
               for char in text)  # fmt: skip


def shown(text: str | bytes | None, limit: int = LIMIT) -> str:
    """Foreign text as one printable line: controls made visible, at most `limit` characters
    (the last one an ellipsis when cut). None is the empty string."""
    if text is None:
        return ""
    visible: list[str] = []
    length = 0
    for char in decoded(text):
        piece = _visible(char)
        if length + len(piece) > limit:
            return "".join(visible)[: limit - 1] + ELLIPSIS
        visible.append(piece)
        length += len(piece)
    return "".join(visible)


def _visible(char: str) -> str:
    if char in _NAMED:
        return _NAMED[char]
    # Python's printable: not a control (C0, DEL, C1), a format character (bidi overrides,
    # zero-width), a separator but the space, a surrogate, private or unassigned.
    if char.isprintable():
        return char
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


MESSAGE_LIMIT = 4096
"""Characters kept of one string in a message: room for an error's traceback."""


def clean(value: T) -> T:
    """A decoded message (dataclasses, lists, maps, text) with every string, map keys too,
    passed through `shown`; the very object when nothing needed it. That is the usual case,
    and kept cheap (a client cleans every sample of every server): maps of numbers and lists
    of numbers are checked at C speed."""
    return cast(T, _clean(value))


def _clean(value: Any) -> Any:
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is str:
        if len(value) <= MESSAGE_LIMIT and value.isprintable():
            return value
        return shown(value, MESSAGE_LIMIT)
    if kind is list:
        if set(map(type, value)) <= _ATOMS:
            return value
        cleaned = [_clean(item) for item in value]
        same = all(new is old for new, old in zip(cleaned, value, strict=True))
        return value if same else cleaned
    if kind is dict:
        return _clean_map(value)
    names = _FIELDS.get(kind)
    if names is None:
        if not dataclasses.is_dataclass(value):
            return value  # bytes
        names = _FIELDS[kind] = tuple(field.name for field in dataclasses.fields(kind))
    changes = {}
    for name in names:
        old = getattr(value, name)
        new = _clean(old)
        if new is not old:
            changes[name] = new
    return dataclasses.replace(value, **changes) if changes else value


def _clean_map(mapping: dict[Any, Any]) -> dict[Any, Any]:
    if set(map(type, mapping)) <= _TEXT:
        keys = "".join(mapping)  # all short and printable: so is each
        plain = len(keys) <= MESSAGE_LIMIT and keys.isprintable()
        if plain and set(map(type, mapping.values())) <= _ATOMS:
            return mapping
    pairs = [(_clean(key), _clean(item)) for key, item in mapping.items()]
    same = all(k is old_k and v is old_v
               for (k, v), (old_k, old_v) in zip(pairs, mapping.items(), strict=True))  # fmt: skip
    return mapping if same else dict(pairs)


_TEXT = {str}
_ATOMS = {int, float, bool, type(None)}
_FIELDS: dict[type, tuple[str, ...]] = {}
