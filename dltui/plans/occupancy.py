"""Whose work is on a server's GPUs, in words, and whether a plan's device is one MIG instance.

The agent refuses a plan for busy GPUs unless it says `force`, and stamps each result of a
forced run with the work it shared the GPUs with; the TUI shows "busy: user alice (job 41233)"
on a server and groups the detail screen's processes by the same owners; `dltui bench` flags
it. All of them word it here. A process the agent started itself (`own`) is never "others".
"""

from __future__ import annotations

import re

from dltui.protocol.samples import GpuProcess

MIG_DEVICE = re.compile(r"cuda:(MIG-(?:GPU-)?[0-9A-Za-z-]{8,64}(?:/\d{1,3}/\d{1,3})?)")
"""A plan's device naming one MIG instance: "cuda:MIG-<uuid>" (or the older
"cuda:MIG-GPU-<uuid>/<gpu instance>/<compute instance>")."""


def mig_uuid(device: str) -> str | None:
    """The MIG instance a device names, as CUDA_VISIBLE_DEVICES takes it; None for others."""
    match = MIG_DEVICE.fullmatch(device)
    return match.group(1) if match else None


def describe_owner(process: GpuProcess) -> str:
    """Who runs a process and where: "user alice (job 41233)", "user bob (docker 3f2a1b9c0d4e)",
    "user root (pod ml/train-0, container trainer)", or its PID where nothing else is known."""
    who = f"user {process.user}" if process.user else f"pid {process.pid}"
    where = []
    if process.job:
        where.append(f"job {process.job}")
    elif process.job_claimed:  # its own environment says so; its cgroup does not
        where.append(f"claims job {process.job_claimed}")
    if process.pod_name:
        where.append(f"pod {process.pod_name}")
        if process.container_name:
            where.append(f"container {process.container_name}")
    elif process.pod:
        where.append(f"pod {process.pod[:8]}")
    if process.container and not process.container_name:
        where.append(f"{process.runtime or 'container'} {process.container[:12]}")
    return f"{who} ({', '.join(where)})" if where else who


def is_others(process: GpuProcess) -> bool:
    """Someone else's work: not the agent's own, and not from an agent older than owners (a
    name but no user), which could not tell its own benchmark from anyone's. A process the
    agent could not see at all (another PID namespace) counts: it may be anyone's."""
    return not process.own and not (process.name is not None and process.user is None)


def others(processes: dict[int, list[GpuProcess]]) -> dict[str, list[int]]:
    """Someone else's work: owner words -> the GPUs it runs on, in order of GPU."""
    found: dict[str, list[int]] = {}
    for index in sorted(processes):
        for process in processes[index]:
            if is_others(process):
                gpus = found.setdefault(describe_owner(process), [])
                if index not in gpus:
                    gpus.append(index)
    return found


def describe_others_work(processes: dict[int, list[GpuProcess]]) -> str | None:
    """ "user alice (job 41233) on GPU 0; user bob on GPU 1, 2", or None when the GPUs run
    nothing but dltui's own work."""
    found = others(processes)
    if not found:
        return None
    return "; ".join(f"{owner} on GPU {', '.join(map(str, gpus))}" for owner, gpus in found.items())
