"""The MIG instances of a server's GPUs in MIG mode: each instance's profile, memory, GPM
activity and processes, so a 1g and a 7g slice are seen side by side."""

from __future__ import annotations

from textual.content import Content

from dltui.fleet.state import ServerView
from dltui.formatting import counted, fmt_bytes
from dltui.tui.widgets.panel import FleetPanel


def has_mig(server: ServerView) -> bool:
    inventory = server.inventory
    return inventory is not None and any(gpu.mig for gpu in inventory.gpus)


class MigPanel(FleetPanel):
    DEFAULT_CLASSES = "-boxed"

    def title(self) -> str:
        return "MIG instances (bench --device cuda:<uuid>)"

    def lines(self, width: int) -> list[Content]:
        inventory = self.server.inventory
        lines: list[Content] = []
        for gpu in inventory.gpus if inventory else []:
            readings = {m.gpu_instance: m.values for m in self.server.mig.get(gpu.index, [])}
            processes = self.server.processes.get(gpu.index, [])
            for instance in gpu.mig_instances:
                values = readings.get(instance.gpu_instance, {})
                used = values.get("mem_used")
                memory = (f"{fmt_bytes(used)} of " if used is not None else "") + fmt_bytes(
                    instance.memory_total)  # fmt: skip
                active = values.get("sm_active")
                count = sum(p.gpu_instance == instance.gpu_instance for p in processes)
                figures = [f"GPU {gpu.index} GI {instance.gpu_instance}", instance.profile, memory,
                           f"SM {active:.0f}%" if active is not None else "SM –",
                           counted(count, "process", "processes")]  # fmt: skip
                lines.append(Content.assemble((" · ".join(figures), "bold"), "  ",
                                              (instance.uuid, "$text-muted")))  # fmt: skip
        return lines
