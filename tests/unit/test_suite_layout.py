"""The suite's own walls: fakes and helpers live in tests/fakes, tests/conftest.py and helper
modules, so no test module imports another (a test module imported elsewhere runs its module
level, its skips included, wherever it is imported)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def imported(path: Path) -> set[str]:
    """Every module `path` imports by name, at its top or inside a function."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_no_test_module_imports_another() -> None:
    found = {
        str(path.relative_to(TESTS)): sorted(
            name for name in imported(path)
            if name.startswith("tests.") and name.rsplit(".", 1)[-1].startswith("test_")
        )
        for path in TESTS.rglob("*.py")
    }  # fmt: skip
    assert len(found) > 100  # the whole suite was read
    assert {path: names for path, names in found.items() if names} == {}
