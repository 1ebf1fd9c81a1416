"""A server's GPU processes grouped by whose they are (job, container, user), for the detail
screen: who else is on the GPUs, how much each holds and uses, and what it runs."""

from __future__ import annotations

import time

from textual.content import Content

from dltui.fleet.state import ServerView
from dltui.formatting import counted, fmt_bytes
from dltui.plans.occupancy import describe_owner
from dltui.protocol.samples import GpuProcess
from dltui.tui.widgets.panel import FleetPanel


def groups(server: ServerView) -> dict[str, list[tuple[int, GpuProcess]]]:
    """Owner words ("user alice (job 41233)", "dltui" for the agent's own) -> (GPU, process)."""
    found: dict[str, list[tuple[int, GpuProcess]]] = {}
    for index in sorted(server.processes):
        for process in server.processes[index]:
            owner = "dltui (this agent's benchmark)" if process.own else describe_owner(process)
            found.setdefault(owner, []).append((index, process))
    return found


def process_line(index: int, process: GpuProcess) -> Content:
    memory = fmt_bytes(process.memory) if process.memory is not None else "–"
    figures = [f"GPU {index}"]
    if process.gpu_instance is not None:
        figures[0] += f" MIG {process.gpu_instance}"
    figures.append(memory)
    if process.sm_util is not None:
        figures.append(f"SM {process.sm_util:.0f}%")
    if process.cpu is not None:
        figures.append(f"CPU {process.cpu:.0f}%")
    if process.started is not None:
        figures.append("since " + time.strftime("%H:%M", time.localtime(process.started)))
    pid = f"{process.pid}" + (f" ({process.ns_pid} inside)" if process.ns_pid else "")
    command = process.command or process.name or "?"
    return Content.assemble(f"  {pid:>8} ", (" · ".join(figures), "bold"), "  ",
                            (command, "$text-muted"))  # fmt: skip


class ProcessGroups(FleetPanel):
    """Every GPU process of the server, under the job, container or user it belongs to."""

    DEFAULT_CLASSES = "-boxed"

    def title(self) -> str:
        return "GPU processes by owner"

    def lines(self, width: int) -> list[Content]:
        found = groups(self.server)
        if not self.server.processes:
            return [Content.styled("none reported yet (every 2 s)", "$text-muted")]
        if not found:
            return [Content.styled("no compute process on any GPU", "$text-muted")]
        lines = []
        for owner, processes in found.items():
            memory = sum(p.memory or 0 for _, p in processes)
            style = "$text-muted" if owner.startswith("dltui") else "bold $text-warning"
            count = counted(len(processes), "process", "processes")
            figures = (f"  {count}, {fmt_bytes(memory)}", "$text-muted")
            lines.append(Content.assemble((owner, style), figures))
            lines += [process_line(index, process) for index, process in processes]
        return lines
