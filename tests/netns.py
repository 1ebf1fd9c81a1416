"""Separate test hosts on this machine: agents/netns-cluster.sh driven from a test.

Each cluster gets a prefix (from the test process's pid) and a subnet no other cluster here
uses, so test runs and test workers on one machine at once do not meet.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, wait_for

SCRIPT = ROOT / "agents" / "netns-cluster.sh"
PORT = 7070


def unavailable() -> str | None:
    """Why network namespaces cannot be made here, or None."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "iproute2 (ip) is not installed; .ci/run installs it"
    probe = f"dltui-probe-{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"ip netns add does not work here: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], check=False)
    return None


def free_subnet(first: int) -> int:
    """The third byte of a 198.18.N.0/24 no bridge here uses yet, trying from `first`: two
    clusters whose pids share a remainder (two test workers) must not share a subnet."""
    used = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True).stdout
    return next(n for n in ((first + k) % 250 for k in range(250)) if f" 198.18.{n}.1/" not in used)


class Cluster:
    def __init__(self, hosts: int, run_dir: Path, cpu_quota: float | None = None,
                 own_cpus: bool = False) -> None:  # fmt: skip
        """`cpu_quota`: each host's agent and what it starts held to that many CPUs; with
        `own_cpus`, on CPUs of its own."""
        self.hosts = hosts
        tag = os.getpid() % 10_000
        self.env = os.environ | {
            "PREFIX": f"dlt{tag}",
            "SUBNET": f"198.18.{free_subnet(tag % 250)}",
            "PORT": str(PORT),
            "DLTUI": f"{sys.executable} -m dltui",
            "RUN_DIR": str(run_dir),
        }
        if cpu_quota is not None:
            self.env["CPU_QUOTA"] = str(cpu_quota)
        if own_cpus:
            self.env["OWN_CPUS"] = "1"
        self.run_dir = run_dir
        self._script("up", str(hosts))

    def _script(self, *args: str) -> None:
        subprocess.run([str(SCRIPT), *args], check=True, env=self.env, cwd=ROOT, timeout=60)

    def address(self, host: int) -> str:
        return f"{self.env['SUBNET']}.{10 + host}:{PORT}"

    def log(self, host: int) -> str:
        path = self.run_dir / f"agent-{host}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def start_agents(self, *args: str) -> None:
        self._script("start", str(self.hosts), *args)
        for host in range(1, self.hosts + 1):
            wait_for(lambda host=host: "listening on" in self.log(host), timeout=30,
                     what=f"the agent on host {host}: {self.log(host)}")  # fmt: skip

    def cut(self, host: int) -> None:
        self._script("cut", str(host))

    def heal(self, host: int) -> None:
        self._script("heal", str(host))

    def shape(self, host: int, rate: str) -> None:
        """Host `host`'s link at `rate` each way (tc tbf: "1gbit", "300mbit"; "off")."""
        self._script("shape", str(host), rate)

    def down(self) -> None:
        self._script("down", str(self.hosts))
