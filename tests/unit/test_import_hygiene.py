"""Headless parts never load Textual or Rich; nothing on the UI's start path loads a framework."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import dltui

HEADLESS = (
    "protocol", "plans", "telemetry", "bench", "agent", "client", "fleet", "recording", "commands",
)  # fmt: skip


ROOT = Path(dltui.__path__[0])


def modules_under(package: str) -> list[str]:
    found = pkgutil.walk_packages([str(ROOT / package)], prefix=f"dltui.{package}.")
    return [f"dltui.{package}", *(info.name for info in found)]


# One interpreter imports every module in turn: a watched package is charged to the first module
# whose import brings it in (and so to every module above it that imports that one).
IMPORT_EACH = """
import importlib, json, sys
modules, watched = json.loads(sys.argv[1]), json.loads(sys.argv[2])
found = {}
for module in modules:
    before = {name for name in watched if name in sys.modules}
    importlib.import_module(module)
    found[module] = sorted(name for name in watched if name in sys.modules and name not in before)
print(json.dumps(found))
"""


def loaded_by(modules: list[str], watched: tuple[str, ...]) -> dict[str, list[str]]:
    """Each module that loads a watched package, with what it loads."""
    result = subprocess.run(
        [sys.executable, "-c", IMPORT_EACH, json.dumps(modules), json.dumps(watched)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    return {module: found for module, found in json.loads(result.stdout).items() if found}


HEADLESS_MODULES = [
    *(name for package in HEADLESS if (ROOT / package).is_dir() for name in modules_under(package)),
    "dltui.cli",
    "dltui.formatting",
]


def test_headless_modules_leave_textual_and_frameworks_out():
    assert len(HEADLESS_MODULES) > 100  # every module found
    assert loaded_by(HEADLESS_MODULES, ("textual", "rich", "torch", "tensorflow")) == {}


def test_tui_start_path_loads_no_framework():
    assert loaded_by(["dltui.tui.app"], ("torch", "tensorflow", "pynvml")) == {}


def test_a_module_that_loads_a_watched_package_is_named():
    assert loaded_by(["dltui.protocol.fields", "dltui.tui.app"], ("textual",)) == {
        "dltui.tui.app": ["textual"]
    }
