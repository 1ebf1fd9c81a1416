"""A real agent on the fake NVML's 8-GPU NVSwitch box: its welcome carries the topology, and
`dltui probe` prints it (and its JSON holds it)."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.conftest import ROOT, dltui_command


@pytest.fixture
def nvlink_agent(agent_factory, fake_nvml):  # type: ignore[no-untyped-def]
    fake_nvml({"topology": "nvlink8"})
    return agent_factory()


def probe(address: str, *args: str) -> str:
    done = subprocess.run(dltui_command("probe", address, *args), capture_output=True,
                          text=True, cwd=ROOT, timeout=60, check=True)  # fmt: skip
    return done.stdout


def test_probe_shows_the_agents_topology(nvlink_agent) -> None:  # type: ignore[no-untyped-def]
    report = json.loads(probe(nvlink_agent.address, "--json"))
    topology = report["inventory"]["topology"]
    assert len(topology["gpus"]) == 8 and len(topology["pairs"]) == 28
    assert {gpu["nvswitch_links"] for gpu in topology["gpus"]} == {18}
    assert topology["pairs"][0]["p2p"]["read"] == "ok"
    assert topology["pairs"][0]["path"] == "hostbridge"
    text = probe(nvlink_agent.address)
    assert "links     NV18 NVLink ×18 (NVSwitch), 450 GB/s each way" in text
    assert "all 28 pairs" in text
