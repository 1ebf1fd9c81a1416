"""How long NVML lists a GPU process as it ends, and whose the agent says it is meanwhile.

Each trial starts a child of this process (which plays the agent) that holds a CUDA context
(and `--gib` of GPU memory), ends it, and polls every millisecond or so, as the agent's
process list would read it: is the PID in NVML's list, is its command line still readable, and
is it `own` to a fresh `Owners`. A PID listed but not `own` is "someone's work": a job sent
then is refused.

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
    and for how long NVML listed it while its command line could not be read, and while
    `Owners` said it was not the agent's."""
    child = subprocess.Popen([sys.executable, "-c", HOLD, str(gib)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert child.stdin is not None and child.stdout is not None
    assert child.stdout.readline().strip() == "holding", "the child could not hold the GPU"
    assert described(Owners(), child.pid).own and listed(handle, child.pid)
    start = last = time.monotonic()
    child.stdin.close()
    reaped = None
    ending = not_own = 0.0
    while True:
        now = time.monotonic()
        if reaped is None and child.poll() is not None:  # reaped at once, as the agent does
            reaped = now - start
        if not listed(handle, child.pid):
            break
        step = now - last
        process = described(Owners(), child.pid)
        if process.command is None:  # its memory gone: psutil calls it a zombie
            ending += step
        if not process.own:
            not_own += step
        last = now
        time.sleep(0.001)
    child.wait()
    return {"reaped": reaped if reaped is not None else time.monotonic() - start,
            "listed": time.monotonic() - start, "ending": ending, "not_own": not_own}  # fmt: skip


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
        ("ending", "listed while its command line could not be read"),
        ("not_own", "listed and not the agent's own"),
    ]:
        values = [trial[key] * 1000 for trial in trials]
        hit = sum(value > 0 for value in values)
        print(f"{words:<55} median {statistics.median(values):7.1f} ms  "
              f"max {max(values):7.1f} ms  in {hit} of {len(values)}")  # fmt: skip


if __name__ == "__main__":
    main()
