"""Build dataclasses from decoded msgpack data, checking every value against the type hints.

Each type hint is compiled once into a small checking function, because the client validates
every sample of every server (64 servers × 10 Hz × 8 GPUs × 20 fields is 100k values a
second). Supported hints: int, float (an int is accepted), str, bytes, bool, X | None,
Literal[...], list[X], dict[str, X] and nested dataclasses. Unknown map keys are ignored.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from typing import Any, Literal, TypeVar, Union, cast

from dltui.protocol.errors import ProtocolError, quote

Check = Callable[[Any], Any]
T = TypeVar("T")


class _Invalid(ProtocolError):
    """A value that does not fit; carries the path to it, innermost last."""

    def __init__(self, reason: str, path: tuple[str, ...] = ()) -> None:
        super().__init__(reason)
        self.reason = reason
        self.path = path

    def within(self, segment: str) -> _Invalid:
        return _Invalid(self.reason, (segment, *self.path))


def build(cls: type[T], data: Any, name: str) -> T:
    """`cls` from `data`; a ProtocolError naming the path to the first bad value."""
    try:
        return cast(T, _checker(cls)(data))
    except _Invalid as exc:
        where = "".join(exc.path)
        raise ProtocolError(f"{name}{where}: {exc.reason}") from None


_CHECKERS: dict[Any, Check] = {}


def _checker(hint: Any) -> Check:
    check = _CHECKERS.get(hint)
    if check is None:
        check = _CHECKERS[hint] = _compile(hint)
    return check


def _type_name(value: Any) -> str:
    return type(value).__name__


def _compile(hint: Any) -> Check:
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        (inner,) = (arg for arg in typing.get_args(hint) if arg is not type(None))
        check_inner = _checker(inner)
        return lambda value: None if value is None else check_inner(value)
    if origin is Literal:
        return _literal(typing.get_args(hint))
    if origin is list:
        return _list(_checker(typing.get_args(hint)[0]))
    if origin is dict:
        key, value = typing.get_args(hint)
        assert key is str, "maps on the wire have string keys"
        return _dict(value)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _dataclass(hint)
    if hint is float:
        return _scalar((int, float), "float")
    return _scalar((hint,), hint.__name__)


def _scalar(accepted: tuple[type, ...], name: str) -> Check:
    def check(value: Any) -> Any:
        if type(value) not in accepted:  # type(), not isinstance(): a bool is not an int here
            raise _Invalid(f"expected {name}, got {_type_name(value)}")
        return value

    return check


def _literal(allowed: tuple[Any, ...]) -> Check:
    def check(value: Any) -> Any:
        if type(value) is not str or value not in allowed:
            raise _Invalid(f"{quote(value)} is not one of {allowed}")
        return value

    return check


def _list(check_item: Check) -> Check:
    def check(value: Any) -> list[Any]:
        if type(value) is not list:
            raise _Invalid(f"expected a list, got {_type_name(value)}")
        out = []
        for index, item in enumerate(value):
            try:
                out.append(check_item(item))
            except _Invalid as exc:
                raise exc.within(f"[{index}]") from None
        return out

    return check


def _dict(value_hint: Any) -> Check:
    if value_hint is float:  # the hot path: telemetry values, checked without copying
        numbers = (int, float)

        def check_numbers(value: Any) -> dict[str, Any]:
            if type(value) is not dict:
                raise _Invalid(f"expected a map, got {_type_name(value)}")
            for key, item in value.items():
                if type(key) is not str or type(item) not in numbers:
                    raise _Invalid(f"expected str → number, got {quote(key)}: {quote(item)}")
            return value

        return check_numbers
    check_value = _checker(value_hint)

    def check(value: Any) -> dict[str, Any]:
        if type(value) is not dict:
            raise _Invalid(f"expected a map, got {_type_name(value)}")
        out = {}
        for key, item in value.items():
            if type(key) is not str:
                raise _Invalid(f"map keys must be strings, got {quote(key)}")
            try:
                out[key] = check_value(item)
            except _Invalid as exc:
                raise exc.within(f"[{quote(key)}]") from None
        return out

    return check


def _dataclass(cls: type) -> Check:
    hints = typing.get_type_hints(cls)
    fields = [(f.name, _checker(hints[f.name])) for f in dataclasses.fields(cls)]

    def check(value: Any) -> Any:
        if type(value) is not dict:
            raise _Invalid(f"expected a map, got {_type_name(value)}")
        kwargs = {}
        for name, check_field in fields:
            if name in value:
                try:
                    kwargs[name] = check_field(value[name])
                except _Invalid as exc:
                    raise exc.within(f".{name}") from None
        try:
            return cls(**kwargs)
        except TypeError as exc:  # a required field is missing
            raise _Invalid(str(exc)) from None

    return check
