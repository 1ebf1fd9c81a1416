from __future__ import annotations

from dataclasses import replace

import pytest

from dltui.client.scale_out import DEFAULT_RENDEZVOUS_PORT, assign_ranks
from dltui.client.target import Target
from dltui.plans.check import PlanError, check_plan
from dltui.protocol.bench_plans import ClusterRole, KernelPlan
from dltui.protocol.inventory import GpuInfo, Inventory

PLAN = KernelPlan(kinds=["allreduce"], shape_set="tiny")


def inventory(gpus: int) -> Inventory:
    return Inventory(
        "h", "Linux", "cpu", 8, 1, [GpuInfo(i, "H200", f"u{i}", 1) for i in range(gpus)]
    )


def test_ranks_follow_each_servers_gpus_with_rank_zero_first():
    targets = [Target("tcp", "gpu-01", 7070), Target("tcp", "gpu-02", 7070)]
    plans = assign_ranks(PLAN, targets, [inventory(8), inventory(4)])
    roles = [plan.cluster for plan in plans]
    assert roles == [
        ClusterRole("gpu-01", DEFAULT_RENDEZVOUS_PORT, 0, 8, 12, servers=2),
        ClusterRole("gpu-01", DEFAULT_RENDEZVOUS_PORT, 8, 4, 12, servers=2),
    ]
    for plan in plans:
        assert check_plan(plan) is plan


def test_cpu_servers_gpus_option_and_rendezvous():
    targets = [Target("local"), Target("tcp", "b", 1)]
    plans = assign_ranks(PLAN, targets, [inventory(0), inventory(0)], ("10.0.0.5", 29600))
    assert [(p.cluster.rank_offset, p.cluster.local_ranks) for p in plans] == [(0, 2), (2, 2)]
    assert plans[0].cluster.master_addr == "10.0.0.5"
    one_each = assign_ranks(replace(PLAN, gpus=1), targets, [inventory(8), inventory(8)])
    assert [p.cluster.world for p in one_each] == [2, 2]


def test_tensorflow_runs_one_worker_per_server():
    targets = [Target("tcp", "gpu-01", 7070), Target("tcp", "gpu-02", 7070)]
    plans = assign_ranks(replace(PLAN, framework="tensorflow"), targets, [inventory(8)] * 2,
                         ("ignored", 30000))  # fmt: skip
    assert [p.cluster.peers for p in plans] == [["gpu-01:30000", "gpu-02:30001"]] * 2
    assert [(p.cluster.rank_offset, p.cluster.world) for p in plans] == [(0, 2), (1, 2)]
    for plan in plans:
        assert check_plan(plan) is plan


@pytest.mark.parametrize(
    ("plan", "words"),
    [
        (replace(PLAN, kinds=["gemm", "allreduce"]), "only the collectives"),
        (replace(PLAN, framework="tensorflow"), "every worker's address"),
        (
            replace(PLAN, framework="tensorflow", cluster=ClusterRole("a", 1, 0, 1, 1, ["a:x"])),
            "not HOST:PORT",
        ),
        (replace(PLAN, cluster=ClusterRole("a;reboot", 1, 0, 1, 2)), "not a host"),
        # Names a resolver cannot encode: an empty part, a part over 63 characters.
        (replace(PLAN, cluster=ClusterRole("gpu01..lab", 1, 0, 1, 2)), "not a host"),
        (replace(PLAN, cluster=ClusterRole("a" * 64 + ".lab", 1, 0, 1, 2)), "not a host"),
        (
            replace(PLAN, framework="tensorflow", cluster=ClusterRole("a", 1, 0, 1, 1, ["a..b:1"])),
            "not HOST:PORT",
        ),
        (replace(PLAN, cluster=ClusterRole("a", 0, 0, 1, 2)), "port"),
        (replace(PLAN, cluster=ClusterRole("a", 1, 1, 2, 2)), "do not fit"),
        (replace(PLAN, gpus=3, cluster=ClusterRole("a", 1, 0, 2, 2)), "differ"),
    ],
)
def test_bad_cluster_roles_are_refused(plan, words):
    if plan.cluster is None:
        plan = replace(plan, cluster=ClusterRole("a", 1, 0, 1, 2))
    with pytest.raises(PlanError, match=words):
        check_plan(plan)
