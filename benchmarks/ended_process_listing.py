"""How long NVML lists a GPU process after it ended, and whose the agent says it is meanwhile.

Each trial starts a child that holds a CUDA context (and `--gib` of GPU memory), ends it, and
polls every millisecond or so, as the agent's process list would read it: is the PID in NVML's
list, can /proc still describe it, and is it `own` to an `Owners` that saw it alive (the
agent's) and to a fresh one (what an agent read that first saw it then, or before it
remembered). A PID listed but not `own` is "someone's work": a job sent then is refused.

    python benchmarks/ended_process_listing.py [--trials 20] [--gib 8]

Needs a GPU and PyTorch with CUDA.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

import pynvml

from dltui.protocol.samples import GpuProcess
from dltui.telemetry.processes import Owners

HOLD = """
import sys, torch
held = torch.empty(int(float(sys.argv[1]) * 2**30), dtype=torch.uint8, device="cuda")
torch.cuda.synchronize()
print("holding", flush=True)
sys.stdin.read()
"""


def listed(handle: object, pid: int) -> bool:
    return any(p.pid == pid for p in pynvml.nvmlDeviceGetComputeRunningProcesses(handle))


def described(owners: Owners, pid: int) -> GpuProcess:
    ((process,),) = owners.describe({0: [GpuProcess(pid, 0)]}).values()
    return process


def one_trial(handle: object, gib: float) -> dict[str, float]:
    """Seconds from closing the child's stdin: until it was reaped, until NVML let its PID go,
    and for how long NVML listed it while /proc could not say whose it was, and while each
    `Owners` said it was not the agent's."""
    child = subprocess.Popen([sys.executable, "-c", HOLD, str(gib)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert child.stdin is not None and child.stdout is not None
    assert child.stdout.readline().strip() == "holding", "the child could not hold the GPU"
    owners = Owners()
    assert described(owners, child.pid).own and listed(handle, child.pid)
    start = last = time.monotonic()
    child.stdin.close()
    reaped = None
    unreadable = not_own_seen = not_own_fresh = 0.0
    while True:
        now = time.monotonic()
        if reaped is None and child.poll() is not None:  # reaped at once, as the agent does
            reaped = now - start
        if not listed(handle, child.pid):
            break
        step = now - last
        fresh = described(Owners(), child.pid)
        if fresh.started is None:  # /proc had nothing to say of it
            unreadable += step
        if not fresh.own:
            not_own_fresh += step
        if not described(owners, child.pid).own:
            not_own_seen += step
        last = now
        time.sleep(0.001)
    child.wait()
    return {"reaped": reaped if reaped is not None else time.monotonic() - start,
            "listed": time.monotonic() - start, "unreadable": unreadable,
            "not_own_seen": not_own_seen, "not_own_fresh": not_own_fresh}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--gib", type=float, default=8.0, help="GPU memory each child holds")
    args = parser.parse_args()
    pynvml.nvmlInit()
    try:
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        trials = [one_trial(handle, args.gib) for _ in range(args.trials)]
    finally:
        pynvml.nvmlShutdown()
    print(f"{args.trials} children holding {args.gib:g} GiB each, ended one after another")
    for key, words in [
        ("reaped", "reaped after its stdin closed"),
        ("listed", "listed by NVML until"),
        ("unreadable", "listed while /proc could not describe it"),
        ("not_own_seen", "listed and not own, to an Owners that saw it alive"),
        ("not_own_fresh", "listed and not own, to a fresh Owners"),
    ]:
        values = [trial[key] * 1000 for trial in trials]
        hit = sum(value > 0 for value in values)
        print(f"{words:<55} median {statistics.median(values):7.1f} ms  "
              f"max {max(values):7.1f} ms  in {hit} of {len(values)}")  # fmt: skip


if __name__ == "__main__":
    main()
