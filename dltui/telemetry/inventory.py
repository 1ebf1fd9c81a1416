"""What a server is: host, CPU, memory, GPUs, driver, how they are wired (telemetry/topology)
and the frameworks it could benchmark with.

Built once per agent. Frameworks are found through their installed distributions, never by
importing them: importing TensorFlow costs seconds and gigabytes, and the agent stays light.
"""

from __future__ import annotations

import os
import platform
import socket

import psutil

from dltui import installed_versions, normalized, version
from dltui.protocol.inventory import Inventory
from dltui.telemetry.nvml import NvmlGateway
from dltui.telemetry.topology import read_topology

# framework -> the distributions that provide it, in order of preference
FRAMEWORK_DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "tensorflow": ("tensorflow", "tensorflow-cpu", "tf-nightly"),
    "torch": ("torch",),
}


def build_inventory(gateway: NvmlGateway) -> Inventory:
    """The inventory of this machine; opens the gateway if it is not open yet."""
    gateway.open()
    return Inventory(
        hostname=socket.gethostname(),
        os=os_description(),
        cpu_model=cpu_model(),
        cpu_count=os.cpu_count() or 0,
        memory_total=psutil.virtual_memory().total,
        gpus=gateway.gpus,
        driver_version=gateway.driver_version,
        cuda_version=gateway.cuda_version,
        nvml_error=gateway.error,
        frameworks=installed_frameworks(installed_versions()),
        python=platform.python_version(),
        dltui=version(),
        topology=read_topology(gateway),
    )


def installed_frameworks(installed: dict[str, str]) -> dict[str, str]:
    """Framework name -> installed version, for those among the `installed` distributions
    (normalized name -> version: `dltui.installed_versions()`)."""
    found = {}
    for framework, distributions in FRAMEWORK_DISTRIBUTIONS.items():
        for distribution in distributions:
            if (installed_version := installed.get(normalized(distribution))) is not None:
                found[framework] = installed_version
                break
    return found


def cpu_model(cpuinfo: str = "/proc/cpuinfo") -> str:
    """The CPU's marketing name, e.g. "AMD EPYC 9654 96-Core Processor"."""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as lines:
            for line in lines:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and value.strip():
                    return value.strip()
    except OSError:
        return platform.processor() or platform.machine() or "unknown"  # not Linux
    # ARM Linux has no "model name" line.
    return platform.processor() or platform.machine() or "unknown"


def os_description() -> str:
    """The distribution and kernel, e.g. "Ubuntu 22.04.4 LTS (Linux 5.15.0-105-generic)"."""
    try:
        name = platform.freedesktop_os_release().get("PRETTY_NAME")
    except OSError:
        name = None
    kernel = f"{platform.system()} {platform.release()}"
    return f"{name} ({kernel})" if name else platform.platform()
