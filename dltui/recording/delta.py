"""Samples stored as what changed since the previous sample from the same server.

Successive samples of one server have the same shape and mostly the same values (limits,
clocks, memory totals, GPM figures read every fifth tick), so a sample is kept as its *leaves*
(the values at the ends of its map's paths, in order) and stored as the positions and new
values of the leaves that changed. The leaves' paths are the sample's shape; a sample whose
shape differs from its base (a GPU lost, a field appearing) is stored whole. Pure and lossless:
a value counts as unchanged only when its type and value are both the same.
"""

from __future__ import annotations

from typing import Any

Node = dict[str, Any] | list[Any] | int
"""A shape compiled for rebuilding: maps and lists of nodes; an int is a leaf's position."""
_DOWN, _UP = ("down",), ("up",)  # in a shape: into a map or list of maps, and out of it


class DeltaError(ValueError):
    """A change list that does not fit its base: a damaged or forged record."""


def _walked(value: Any) -> bool:
    """Whether a map's or list's `value` is walked into: non-empty maps, and non-empty lists of
    maps; anything else (scalars, lists of scalars, empty maps) is a leaf."""
    kind = type(value)
    if kind is dict:
        return bool(value)
    return kind is list and bool(value) and all(type(item) is dict for item in value)


def leaves(wire: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    """A message map's shape (its keys, in order, with where maps begin and end: two maps have
    the same shape when their shapes are equal) and its leaves' values, in the same order."""
    shape: list[Any] = []
    values: list[Any] = []

    def walk(node: dict[str, Any] | list[Any]) -> None:
        for key, value in node.items() if type(node) is dict else enumerate(node):
            shape.append(key)
            if _walked(value):
                shape.append(_DOWN)
                walk(value)
                shape.append(_UP)
            else:
                values.append(value)

    walk(wire)
    return shape, values


def compile_shape(wire: dict[str, Any]) -> Node:
    """The tree `rebuild` fills for maps of `wire`'s shape: `wire` with each leaf replaced by
    its position in `leaves`."""
    count = 0

    def walk(node: Any) -> Node:
        nonlocal count
        if not _walked(node):
            count += 1
            return count - 1
        if type(node) is dict:
            return {key: walk(value) for key, value in node.items()}
        return [walk(item) for item in node]

    return walk(wire)


def changes(base: list[Any], values: list[Any]) -> list[Any]:
    """[position, value, position, value, …] of the leaves that differ from `base` (same shape)."""
    found: list[Any] = []
    for position, (old, new) in enumerate(zip(base, values, strict=True)):
        if old != new or type(old) is not type(new):
            found += (position, new)
        elif type(new) is list and list(map(type, old)) != list(map(type, new)):
            found += (position, new)  # [1] == [1.0], but they are not the same list
    return found


def apply_changes(base: list[Any], found: list[Any]) -> list[Any]:
    """The leaf values of `base` with `found` applied; DeltaError if they do not fit."""
    if type(found) is not list or len(found) % 2:
        raise DeltaError("a change list must hold position, value pairs")
    values = list(base)
    for index in range(0, len(found), 2):
        position = found[index]
        if type(position) is not int or not 0 <= position < len(values):
            raise DeltaError(f"change at leaf {position!r} of a sample with {len(values)}")
        values[position] = found[index + 1]
    return values


def rebuild(shape: Node, values: list[Any]) -> Any:
    """The message map back from its leaves (the inverse of `leaves`)."""
    if isinstance(shape, dict):
        return {key: values[node] if type(node) is int else rebuild(node, values)
                for key, node in shape.items()}  # fmt: skip
    if isinstance(shape, list):
        return [values[node] if type(node) is int else rebuild(node, values) for node in shape]
    return values[shape]
