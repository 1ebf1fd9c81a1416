"""Headless parts never load Textual or Rich; nothing on the UI's start path loads a framework."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import dltui

HEADLESS = (
    "protocol", "plans", "telemetry", "bench", "agent", "client", "fleet", "recording", "commands",
)  # fmt: skip


ROOT = Path(dltui.__path__[0])


def modules_under(package: str) -> list[str]:
    found = pkgutil.walk_packages([str(ROOT / package)], prefix=f"dltui.{package}.")
    return [f"dltui.{package}", *(info.name for info in found)]


def loaded_after_import(module: str, watched: tuple[str, ...]) -> list[str]:
    code = (
        f"import sys, importlib; importlib.import_module({module!r}); "
        f"print(','.join(m for m in {watched!r} if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return [m for m in result.stdout.strip().split(",") if m]


HEADLESS_MODULES = [
    *(name for package in HEADLESS if (ROOT / package).is_dir() for name in modules_under(package)),
    "dltui.cli",
    "dltui.formatting",
]


@pytest.mark.parametrize("module", HEADLESS_MODULES)
def test_headless_module_leaves_textual_out(module):
    assert loaded_after_import(module, ("textual", "rich", "torch", "tensorflow")) == []


def test_tui_start_path_loads_no_framework():
    assert loaded_after_import("dltui.tui.app", ("torch", "tensorflow", "pynvml")) == []
