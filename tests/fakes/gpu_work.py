"""Someone else's work on a fake GPU, and a running fake NVML told what to change: for tests of
real agents on the fake NVML (the `fake_nvml` fixture in conftest)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, wait_for

HOLD = ("import sys, time; from pathlib import Path; from tests.fakes.nvml_ops import "
        "hold_context; hold_context(Path(sys.argv[1]), int(sys.argv[2]), 3 << 30); "
        "time.sleep(120)")  # fmt: skip


def command(control: Path, **what: object) -> None:
    """Tell the fake NVML of an agent started under `fake_nvml` to change something now."""
    with open(control, "a") as file:
        file.write(json.dumps(what) + "\n")


def hold(folder: Path, gpu: int = 0, *prefix: str) -> subprocess.Popen[bytes]:
    """A Python process that holds a context on fake GPU `gpu`, until killed."""
    holder = subprocess.Popen([*prefix, sys.executable, "-c", HOLD, str(folder), str(gpu)],
                              cwd=ROOT, start_new_session=True)  # fmt: skip
    wait_for(lambda: any(folder.iterdir()), 30.0, "the context held")
    return holder


def stop(process: subprocess.Popen[bytes]) -> None:
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
