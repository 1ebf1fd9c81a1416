"""docs/protocol.md as data: its constants and its message tables, for the tests that hold an
implementation to the document (this package's client, and the check that the code agrees)."""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

DOCUMENT = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"
_CONSTANT = re.compile(r"^\| `([A-Z_]+)` \| `([^`]+)` \|", re.M)
_HEADING = re.compile(r"^#### `(\w+)`")
_FIELD = re.compile(r"^\| `(\w+)` \| ([^|]+?) \| (required|`[^`]*`) \|")


@dataclass(frozen=True)
class Field:
    name: str
    type: str
    """As the document writes it: int, float, str, bin, bool, T?, [T], {str: T} or a name."""
    required: bool
    default: Any = None
    """The value a field takes when it is left out (nil is None)."""


@cache
def constants() -> dict[str, Any]:
    """The Constants table: name → int or bytes."""
    text = DOCUMENT.read_text()
    return {name: ast.literal_eval(value) for name, value in _CONSTANT.findall(text)}


@cache
def structures() -> dict[str, tuple[Field, ...]]:
    """Every field table, by the name in its heading: a message type (`hello`) or a
    structure (`Inventory`)."""
    tables: dict[str, list[Field]] = {}
    current: list[Field] | None = None
    for line in DOCUMENT.read_text().splitlines():
        if heading := _HEADING.match(line):
            current = tables.setdefault(heading.group(1), [])
        elif current is not None and (row := _FIELD.match(line)):
            name, kind, absent = row.groups()
            required = absent == "required"
            default = None if required else json.loads(re.sub(r"\bnil\b", "null", absent[1:-1]))
            current.append(Field(name, kind.strip(), required, default))
    return {name: tuple(fields) for name, fields in tables.items()}
