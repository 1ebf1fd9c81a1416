"""What this machine's GPUs report for issue #14's reads, and what each costs: the health
fields (the link now against its maximum, replays, retired pages, remapped rows, NVLink error
counters), whether XID events can be registered, per-process utilization, and MIG mode. Each
read NVML refuses says why. For docs/results/health-<machine>.json.

    python benchmarks/health_check.py [--calls 20] [--out docs/results/health-h200.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

import pynvml

from dltui.telemetry.nvml import NvmlGateway, Unanswered
from dltui.telemetry.nvml_health import HEALTH_READERS
from dltui.telemetry.xid import XID_EVENT


def timed(gateway: NvmlGateway, reader: Any, handle: Any, calls: int) -> dict[str, Any]:
    """A health reader's values and its median cost, or NVML's reason for refusing it."""

    def call(name: str, *args: Any) -> Any:
        return gateway.call_or_unanswered(name, *args)

    try:
        values = reader(call, pynvml, handle)
    except Unanswered as exc:
        return {"unanswered": str(exc)}
    except Exception as exc:  # NotSupported raised by the reader itself
        return {"unanswered": f"{type(exc).__name__}: {exc}"}
    costs = []
    for _ in range(calls):
        began = time.perf_counter()
        reader(call, pynvml, handle)
        costs.append(time.perf_counter() - began)
    return {"values": values, "median_us": round(statistics.median(costs) * 1e6, 1)}


def answer_or_reason(gateway: NvmlGateway, name: str, *args: Any) -> Any:
    try:
        return gateway.call_or_unanswered(name, *args)
    except Unanswered as exc:
        return f"unanswered: {exc}"


def gpu_report(gateway: NvmlGateway, index: int, calls: int) -> dict[str, Any]:
    info = gateway.gpus[index]
    opened = gateway.opened(index)
    report: dict[str, Any] = {"name": info.name, "pcie_max": [info.pcie_gen_max,
                              info.pcie_width_max], "mig": info.mig,
                              "mig_instances": len(info.mig_instances)}  # fmt: skip
    if opened is None:
        return report | {"state": "not open"}
    handle = opened[0]
    report["health"] = {group: timed(gateway, reader, handle, calls)
                        for group, reader in HEALTH_READERS.items()}  # fmt: skip
    report["pcie_replay"] = answer_or_reason(gateway, "nvmlDeviceGetPcieReplayCounter", handle)
    report["supported_events"] = answer_or_reason(
        gateway, "nvmlDeviceGetSupportedEventTypes", handle
    )
    report["process_utilization"] = answer_or_reason(
        gateway, "nvmlDeviceGetProcessUtilization", handle, 0
    )
    if isinstance(report["process_utilization"], list):
        report["process_utilization"] = f"{len(report['process_utilization'])} samples"
    return report


def xid_registration(gateway: NvmlGateway) -> dict[str, str]:
    try:
        event_set = gateway.call_or_unanswered("nvmlEventSetCreate")
    except Unanswered as exc:
        return {"event set": f"unanswered: {exc}"}
    found = {}
    for index in range(gateway.count):
        opened = gateway.opened(index)
        if opened is not None:
            result = answer_or_reason(
                gateway, "nvmlDeviceRegisterEvents", opened[0], XID_EVENT, event_set
            )
            found[f"GPU {index}"] = "registered" if result is None else str(result)
    answer_or_reason(gateway, "nvmlEventSetFree", event_set)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    gateway = NvmlGateway()
    gateway.open()
    try:
        report = {
            "driver": gateway.driver_version,
            "error": gateway.error,
            "gpus": [gpu_report(gateway, index, args.calls) for index in range(gateway.count)],
            "xid": xid_registration(gateway),
        }
    finally:
        gateway.close()
    text = json.dumps(report, indent=2, default=str)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
