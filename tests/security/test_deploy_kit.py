"""The deploy kit in agents/ is what the agent accepts: its example config loads, and systemd
accepts its unit."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from dltui.agent.config import load_config
from tests.conftest import ROOT

AGENTS = ROOT / "agents"


def test_the_example_config_is_a_valid_agent_config():
    settings = load_config(AGENTS / "agent.toml")
    assert settings["listen"] == ("0.0.0.0", 7070) and settings["nvml_timeout"] == 30.0
    assert settings["secret_file"].startswith("/run/credentials/dltui-agent.service/")


def test_systemd_accepts_the_unit(tmp_path):
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed")
    unit = (AGENTS / "dltui-agent.service").read_text()
    assert "DynamicUser=yes" in unit and "ProtectSystem=strict" in unit
    assert "PrivateDevices=yes" not in unit.replace("# Not set, on purpose: PrivateDevices", "")
    # verify wants the program to exist: this checkout's, in place of /opt/dltui's.
    local = tmp_path / "dltui-agent.service"
    local.write_text(unit.replace("/opt/dltui/bin/dltui", f"{sys.executable} -m dltui"))
    result = subprocess.run(["systemd-analyze", "verify", str(local)], capture_output=True,
                            text=True, timeout=60)  # fmt: skip
    assert result.returncode == 0 and "dltui-agent.service" not in result.stderr, result.stderr
