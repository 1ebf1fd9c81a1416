"""Scale-out: one plan over several agents, each told its ranks and where rank 0 waits.

The client only hands out numbers; torch.distributed (or tf.distribute) moves the data between
the servers.
"""

from __future__ import annotations

from dataclasses import replace

from dltui.client.target import Target
from dltui.plans.names import CPU_RANKS
from dltui.protocol.bench_plans import ClusterRole, ModelPlan, Plan
from dltui.protocol.inventory import Inventory

DEFAULT_RENDEZVOUS_PORT = 29500  # torch.distributed's customary MASTER_PORT


def rendezvous_host(target: Target) -> str:
    """Rank 0's address as the other agents should reach it: the one we reached it by."""
    return "127.0.0.1" if target.kind == "local" else target.host


def local_ranks(plan: Plan, inventory: Inventory) -> int:
    """Ranks on one server: the plan's GPU count, else one per GPU, else CPU processes."""
    asked = plan.gpus[0] if isinstance(plan, ModelPlan) else plan.gpus
    if asked:
        return asked
    return len(inventory.gpus) if plan.device != "cpu" and inventory.gpus else CPU_RANKS


def assign_ranks(
    plan: Plan,
    targets: list[Target],
    inventories: list[Inventory],
    rendezvous: tuple[str, int] | None = None,
) -> list[Plan]:
    """Each agent's plan: its global ranks, in order, with rank 0 on the first agent.
    TensorFlow runs one worker per agent instead (each with its local GPUs), each listening on
    the rendezvous port plus its index, on the address the client reached it by."""
    if plan.framework == "tensorflow":
        port = rendezvous[1] if rendezvous else DEFAULT_RENDEZVOUS_PORT
        peers = [f"{rendezvous_host(target)}:{port + i}" for i, target in enumerate(targets)]
        host = rendezvous_host(targets[0])
        return [
            replace(plan, cluster=ClusterRole(host, port, i, 1, len(targets), peers, len(targets)))
            for i in range(len(targets))
        ]
    counts = [local_ranks(plan, inventory) for inventory in inventories]
    host, port = rendezvous or (rendezvous_host(targets[0]), DEFAULT_RENDEZVOUS_PORT)
    world = sum(counts)
    plans: list[Plan] = []
    offset = 0
    for count in counts:
        role = ClusterRole(host, port, offset, count, world, servers=len(targets))
        plans.append(replace(plan, cluster=role))
        offset += count
    return plans
