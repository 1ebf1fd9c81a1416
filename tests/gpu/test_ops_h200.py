"""Issue #14 on a real GPU: the health fields NVML really gives, XID registration, a process
holding the GPU found with its owner and utilization, and a bench onto that busy GPU refused,
then forced and flagged.

Skipped where NVML sees no GPU; the process and bench tests need PyTorch with CUDA. Run with
`pytest -m gpu tests/gpu/test_ops_h200.py -s` (`benchmarks/health_check.py` writes what the GPU
reports to docs/results/).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from dltui.commands.exit_status import REFUSED
from dltui.protocol.messages import Subscribe
from dltui.telemetry.nvml import NvmlGateway
from dltui.telemetry.processes import Owners
from dltui.telemetry.schedule import Schedule
from dltui.telemetry.xid import watch_xid
from tests.agents import connect, listed, until
from tests.conftest import ROOT, dltui_command, wait_for

pytestmark = pytest.mark.gpu

HOLD = """
import sys, time, torch
x = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
print("holding", flush=True)
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    y = x @ x  # keeps the SMs busy, for the per-process utilization
torch.cuda.synchronize()
"""


@pytest.fixture
def holder(gateway: NvmlGateway) -> Iterator[subprocess.Popen[str]]:
    """A second process that holds GPU 0 and keeps it busy for a minute (started once NVML
    shows a GPU: the process spends seconds importing torch to find none)."""
    pytest.importorskip("torch")
    env = os.environ | {"CUDA_VISIBLE_DEVICES": "0"}
    process = subprocess.Popen([sys.executable, "-c", HOLD, "60"], stdout=subprocess.PIPE,
                               text=True, env=env)  # fmt: skip
    assert process.stdout is not None
    if process.stdout.readline().strip() != "holding":
        process.kill()
        pytest.skip("PyTorch cannot use the GPU here")
    yield process
    process.kill()
    process.wait()


def test_the_health_fields_nvml_gives_and_their_bounds(gateway: NvmlGateway) -> None:
    values = Schedule().read_slow(gateway.readers, time.monotonic())  # all due, the first time
    for index, info in enumerate(gateway.gpus):
        found = values.get(index, {})
        print(f"\nGPU {index} {info.name}: " + ", ".join(
            f"{name} {found[name]:g}" for name in sorted(found)))  # fmt: skip
        assert 1 <= found["pcie_gen"] <= (info.pcie_gen_max or 6)
        assert 1 <= found["pcie_width"] <= (info.pcie_width_max or 16)
        assert found["pcie_replay"] >= 0
        if "Hopper" in info.name or "H100" in info.name or "H200" in info.name:
            # Row remapping replaced page retirement from Ampere on.
            assert {"remapped_correctable", "remap_pending", "remap_failed"} <= found.keys()
            assert "retired_sbe" not in found
        if info.nvlink_links:
            assert "nvlink_crc_errors" in found
        assert not info.mig or info.mig_instances  # a MIG-mode GPU lists its instances


def test_xid_events_register_and_the_thread_stops_in_time(gateway: NvmlGateway) -> None:
    stopping = threading.Event()
    events: list[object] = []
    thread = threading.Thread(target=watch_xid, args=(gateway, events.append, stopping))
    thread.start()
    time.sleep(1.5)  # ok: at least one wait of the XID thread, which must not have failed
    stopping.set()
    thread.join(3.0)
    assert not thread.is_alive()
    print(f"\nXIDs seen in 1.5 s: {events}")


def test_a_process_holding_the_gpu_is_found_with_its_owner_and_utilization(
    holder: subprocess.Popen[str],
) -> None:
    gateway, owners, schedule = NvmlGateway(), Owners(), Schedule()
    gateway.open()

    def holding() -> list:
        found = schedule.read_processes(gateway.readers, time.monotonic())  # {} until due (2 s)
        lists = owners.describe(found)
        return [p for found in lists.values() for p in found if p.pid == holder.pid]

    try:
        (process,) = wait_for(holding, 30, "the holder listed")
        (again,) = wait_for(holding, 30, "the holder listed again")
    finally:
        gateway.close()
    print(f"\nthe holder as the agent sees it: {again}")
    assert again.cpu is not None and again.cpu > 10  # its Python loop, between two lists
    assert process.user == psutil.Process().username()
    assert process.own  # a child of this process, which plays the agent here
    assert process.memory and process.memory >= 128 << 20
    assert process.command and "torch" in process.command
    # The first list's samples may predate the holder's loop; the second's are all of it.
    assert again.sm_util is not None and again.sm_util > 10  # a GEMM loop keeps SMs busy


async def test_a_bench_while_a_second_process_holds_the_gpu_is_flagged(
    gateway: NvmlGateway, holder: subprocess.Popen[str], agent_factory, tmp_path: Path
) -> None:
    agent = agent_factory()
    client, _ = await connect(agent.address)  # until the agent's list shows the holder
    await client.stream.send(Subscribe(1, 10.0))
    await until(client.stream, listed(holder.pid))
    await client.close()
    tiny = ("--set", "tiny", "--kind", "gemm", "--device", "cuda")
    refused = subprocess.run(dltui_command("bench", "kernels", "--agent", agent.address, *tiny),
                             capture_output=True, text=True, cwd=ROOT, timeout=300)  # fmt: skip
    print(f"\n{refused.stderr}")
    assert refused.returncode == REFUSED
    assert f"in use: user {psutil.Process().username()}" in refused.stderr and "GPU 0" in (
        refused.stderr)  # fmt: skip
    report = tmp_path / "forced.json"
    forced = subprocess.run(
        dltui_command("bench", "kernels", "--agent", agent.address, *tiny, "--force", "--json",
                      str(report)),
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )  # fmt: skip
    print(forced.stdout)
    assert forced.returncode == 0, forced.stderr
    assert "busy: user" in forced.stdout and "(forced:" in forced.stdout
    results = json.loads(report.read_text())["results"]
    assert results and all(result["others"] for result in results)
