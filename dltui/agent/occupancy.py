"""Someone else's work on this server's GPUs, as the sampler last listed it: why a plan is
refused (unless it says `force`) and what each result of a forced run is stamped with.

Two benchmarks on one GPU measure each other; so do a benchmark and someone's training job. The
lists come every 2 s with the samples (the sampler's thread writes, the event loop reads; a
whole list is replaced at once).
"""

from __future__ import annotations

from dltui.plans.occupancy import describe_others_work, mig_uuid
from dltui.protocol.bench_plans import Plan
from dltui.protocol.inventory import Inventory
from dltui.protocol.messages import Sample
from dltui.protocol.samples import GpuProcess


class Occupancy:
    def __init__(self, inventory: Inventory) -> None:
        self._processes: dict[int, list[GpuProcess]] = {}
        self._instances = {instance.uuid: (gpu.index, instance.gpu_instance)
                           for gpu in inventory.gpus for instance in gpu.mig_instances}  # fmt: skip

    def observe(self, sample: Sample) -> None:
        for gpu in sample.gpus:
            if gpu.processes is not None:
                self._processes[gpu.index] = gpu.processes

    def others(self, plan: Plan) -> str | None:
        """The work a plan's GPUs run that is not this agent's, in words; None when none."""
        if plan.device == "cpu":
            return None
        processes = dict(self._processes)
        uuid = mig_uuid(plan.device)
        if uuid is not None and uuid in self._instances:  # one MIG instance: its own processes
            index, instance = self._instances[uuid]
            processes = {index: [p for p in processes.get(index, [])
                                 if p.gpu_instance == instance]}  # fmt: skip
        return describe_others_work(processes)

    def refusal(self, plan: Plan) -> str | None:
        """Why the plan may not run now, or None."""
        uuid = mig_uuid(plan.device)
        if uuid is not None and uuid not in self._instances:
            known = ", ".join(self._instances) or "none"
            return f"no MIG instance {uuid} on this server (its instances: {known})"
        others = None if plan.force else self.others(plan)
        if others is None:
            return None
        return f"in use: {others}; force the run to benchmark anyway (dltui bench --force)"
