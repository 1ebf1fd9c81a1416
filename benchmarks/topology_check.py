"""The topology an agent reads on this machine, timed and checked against `nvidia-smi topo -m`.

Reads the inventory through dltui's NVML gateway and sysfs as an agent does at its start,
times the topology read, prints the wiring in words, and sets each GPU pair's link, each GPU's
NUMA node and CPU affinity and each RDMA NIC's path to each GPU beside nvidia-smi's: where
both answer, they must agree. Anything NVML did not answer is listed with its reason.

    python benchmarks/topology_check.py [--repeat 5] [--out docs/results/topology-h200]

Writes OUT.json (topology, timings, nvidia-smi's table, disagreements) and OUT.txt; exits 1
when dltui and nvidia-smi disagree.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dltui.plans.topology import matrix, path_short  # noqa: E402
from dltui.protocol.inventory import Inventory  # noqa: E402
from dltui.protocol.wire import to_plain  # noqa: E402
from dltui.result_text import wiring_lines  # noqa: E402
from dltui.telemetry.inventory import build_inventory  # noqa: E402
from dltui.telemetry.nvml import NvmlGateway  # noqa: E402
from dltui.telemetry.topology import read_topology  # noqa: E402

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def parse_topo(text: str) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """nvidia-smi topo -m as {row: {column: cell}} (GPUs and NICs, plus "CPU Affinity",
    "NUMA Affinity") and its NIC legend {"NIC0": "mlx5_0"}."""
    lines = [ANSI.sub("", line) for line in text.splitlines()]
    header_at = next(i for i, line in enumerate(lines) if re.search(r"\tGPU0\b", line))
    header = [cell.strip() for cell in lines[header_at].split("\t")]
    table: dict[str, dict[str, str]] = {}
    for line in lines[header_at + 1 :]:
        cells = [cell.strip() for cell in line.split("\t")]
        if not cells or not re.fullmatch(r"(GPU|NIC)\d+", cells[0]):
            break
        table[cells[0]] = dict(zip(header[1:], cells[1:], strict=False))
    legend = dict(re.findall(r"^\s*(NIC\d+):\s*(\S+)", "\n".join(lines), flags=re.MULTILINE))
    return table, legend


def disagreements(inventory: Inventory, table: dict[str, dict[str, str]],
                  legend: dict[str, str]) -> list[str]:  # fmt: skip
    """Where dltui's reading and nvidia-smi's differ (both having answered)."""
    topology = inventory.topology
    assert topology is not None
    found = []
    for row in matrix(topology, inventory.gpus):
        for link in row:
            if link is None:
                continue
            theirs = table.get(f"GPU{link.a}", {}).get(f"GPU{link.b}")
            if theirs and link.short != "?" and theirs != link.short:
                found.append(f"GPU{link.a}-GPU{link.b}: dltui {link.short}, nvidia-smi {theirs}")
    for place in topology.gpus:
        theirs_row = table.get(f"GPU{place.index}", {})
        numa = theirs_row.get("NUMA Affinity", "N/A")
        if numa not in ("", "N/A") and place.numa_node is not None and numa != str(place.numa_node):
            found.append(f"GPU{place.index} NUMA: dltui {place.numa_node}, nvidia-smi {numa}")
        cpus = theirs_row.get("CPU Affinity", "N/A")
        if cpus not in ("", "N/A") and place.cpu_affinity and cpus != place.cpu_affinity:
            found.append(f"GPU{place.index} CPUs: dltui {place.cpu_affinity}, nvidia-smi {cpus}")
    by_rdma = {nic.rdma_device: nic for nic in topology.nics if nic.rdma_device}
    for column, device in legend.items():
        nic = by_rdma.get(device)
        if nic is None:
            found.append(f"{column} ({device}): nvidia-smi lists it, dltui found no such NIC")
            continue
        for place, path in zip(topology.gpus, nic.gpu_paths, strict=False):
            theirs = table.get(f"GPU{place.index}", {}).get(column)
            if theirs and path is not None and theirs != path_short(path):
                found.append(f"{device}-GPU{place.index}: dltui {path_short(path)}, "
                             f"nvidia-smi {theirs}")  # fmt: skip
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    gateway = NvmlGateway()
    started = time.perf_counter()
    inventory = build_inventory(gateway)
    inventory_ms = (time.perf_counter() - started) * 1000
    reads = []
    for _ in range(args.repeat):
        started = time.perf_counter()
        read_topology(gateway)
        reads.append((time.perf_counter() - started) * 1000)
    gateway.close()
    smi = shutil.which("nvidia-smi")
    topo = subprocess.run([smi, "topo", "-m"], capture_output=True, text=True).stdout if smi else ""
    table, legend = parse_topo(topo) if "GPU0" in topo else ({}, {})
    differ = disagreements(inventory, table, legend) if inventory.topology else []
    lines = [
        f"{inventory.hostname}: {len(inventory.gpus)} GPU(s), driver {inventory.driver_version}",
        f"inventory with topology: {inventory_ms:.0f} ms; topology read alone, median of "
        f"{args.repeat}: {statistics.median(reads):.1f} ms (min {min(reads):.1f})",
        *wiring_lines(inventory),
        "",
        "nvidia-smi topo -m:",
        topo.rstrip() or "(no nvidia-smi)",
        "",
        "disagreements: " + ("none" if not differ else f"{len(differ)}"),
        *differ,
    ]
    print("\n".join(lines))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        report = {
            "inventory": to_plain(inventory),
            "inventory_ms": inventory_ms,
            "topology_read_ms": reads,
            "nvidia_smi_topo": topo,
            "disagreements": differ,
        }
        args.out.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
        args.out.with_suffix(".txt").write_text("\n".join(lines) + "\n")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
