"""Messages to and from the plain maps msgpack carries: `to_wire` for sending, `from_wire` to
validate a decoded map and build its message (anything off is a `ProtocolError`), and
`to_plain` for any of the protocol's dataclasses (msgpack and JSON alike)."""

from __future__ import annotations

import dataclasses
from typing import Any

from dltui.protocol.errors import ProtocolError
from dltui.protocol.messages import MESSAGE_TYPES, Message, Sample
from dltui.protocol.validate import build


def to_wire(message: Message) -> dict[str, Any]:
    """A message as the plain map msgpack sends."""
    if type(message) is Sample:
        return _sample_wire(message)
    wire = {"type": message.TYPE}
    wire.update(to_plain(message))
    return wire


def _sample_wire(sample: Sample) -> dict[str, Any]:
    """A sample's map built field by field: an agent makes one every tick, and the generic walk
    (to_plain) visits every value of every GPU to find that each is a plain number. Its maps of
    values are the sample's own (not copied): the caller only packs them."""
    return {
        "type": Sample.TYPE,
        "seq": sample.seq,
        "wall": sample.wall,
        "mono": sample.mono,
        "host": {"values": sample.host.values, "cpu_per_core": sample.host.cpu_per_core},
        "gpus": [
            {
                "index": gpu.index,
                "state": gpu.state,
                "values": gpu.values,
                "errors": gpu.errors,
                "processes": None if gpu.processes is None else to_plain(gpu.processes),
                "mig": None if gpu.mig is None else to_plain(gpu.mig),
            }
            for gpu in sample.gpus
        ],
    }


_SCALARS = (int, float, str, bytes, bool, type(None))
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def to_plain(obj: Any) -> Any:
    """Dataclasses as plain maps and lists, for msgpack and JSON.

    On the agent's hot path (every sample), so scalars return first and field names are cached.
    """
    cls = type(obj)
    if cls in _SCALARS:
        return obj
    if cls is dict:
        return {key: to_plain(value) for key, value in obj.items()}
    if cls is list:
        return [to_plain(item) for item in obj]
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(obj))
    return {name: to_plain(getattr(obj, name)) for name in names}


def from_wire(obj: Any) -> Message:
    """Validate a decoded map and build its message; anything off is a ProtocolError."""
    if not isinstance(obj, dict):
        raise ProtocolError(f"a message must be a map, got {type(obj).__name__}")
    kind = obj.get("type")
    if not isinstance(kind, str) or kind not in MESSAGE_TYPES:
        raise ProtocolError(f"unknown message type {kind!r}")
    return build(MESSAGE_TYPES[kind], obj, kind)
