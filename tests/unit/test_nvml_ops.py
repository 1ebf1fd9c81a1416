"""The gateway's reads of issue #14 against the fake NVML (ops.py follows NVML's documented
calls): health fields, per-process utilization since the last-seen timestamp, MIG instances
and their readings, and XIDs from the event set on their own thread."""

from __future__ import annotations

import threading

from dltui.protocol.inventory import MigInstance
from dltui.telemetry.xid import watch_xid
from tests.conftest import wait_for
from tests.fakes.nvml import FakeGpu, FakeNvml
from tests.fakes.nvml_ops import OpsCalls, mig_instances
from tests.fakes.scheduled import ScheduledGateway


class Nvml(OpsCalls, FakeNvml):
    pass


def opened(*gpus: FakeGpu, **options) -> tuple[ScheduledGateway, Nvml]:
    nvml = Nvml(list(gpus) or [FakeGpu()], **options)
    gateway = ScheduledGateway(nvml, nvml.clock)
    return gateway, nvml


def test_health_fields_every_five_seconds_where_nvml_gives_them() -> None:
    linked, plain = FakeGpu(uuid="GPU-0", links=[1, 1]), FakeGpu(uuid="GPU-1")
    gateway, nvml = opened(linked, plain)
    nvml.health[0].pcie = (4, 8)
    nvml.health[0].replay = 12
    nvml.health[0].remapped = (2, 1, 1, 0)
    nvml.health[0].nvlink_errors = {"crc_flit": 3, "crc_data": 4, "replay": 1, "recovery": 0}
    nvml.health[1].retired, nvml.health[1].remapped = (5, 1, 1), None  # a GPU before Ampere
    gateway.open()
    first, second = gateway.read_slow()[0], gateway.read_slow()
    assert {k: first[k] for k in ("pcie_gen", "pcie_width", "pcie_replay")} == {
        "pcie_gen": 4, "pcie_width": 8, "pcie_replay": 12}  # fmt: skip
    assert (first["remapped_correctable"], first["remapped_uncorrectable"]) == (2, 1)
    assert (first["remap_pending"], first["remap_failed"]) == (1.0, 0.0)
    assert (first["nvlink_crc_errors"], first["nvlink_replay_errors"]) == (7, 1)
    assert "retired_sbe" not in first  # NotSupported: found once, never asked again
    assert second == {}  # nothing due again within 5 s
    nvml.clock.now += 5.0
    other = gateway.read_slow()[1]
    assert (other["retired_sbe"], other["retired_dbe"], other["retired_pending"]) == (5, 1, 1.0)
    assert "nvlink_crc_errors" not in other  # no NVLink, never asked
    assert "remapped_correctable" not in other
    assert linked.calls["nvmlDeviceGetRemappedRows"] == 2
    assert plain.calls["nvmlDeviceGetRetiredPages"] == 2 * 2  # both causes, twice


def test_per_process_utilization_passes_the_last_seen_timestamp() -> None:
    gpu = FakeGpu(processes=[(4242, 70 << 30), (77, None)])
    gateway, nvml = opened(gpu)
    gateway.open()
    nvml.health[0].utilization = {4242: (87, 12)}
    (listed,) = gateway.read_processes().values()
    busy, idle = listed
    assert (busy.pid, busy.memory, busy.sm_util, busy.mem_util) == (4242, 70 << 30, 87, 12)
    assert (idle.sm_util, idle.mem_util) == (0.0, 0.0)  # no sample since the last read: idle
    seen = gateway._readers[0].util_seen
    assert seen == int(nvml.clock.now * 1e6)
    nvml.clock.now += 2.0
    nvml.health[0].utilization = {}
    (again,) = gateway.read_processes().values()
    assert again[0].sm_util == 0.0  # NotFound: nothing new since `seen`
    gpu.processes = []
    nvml.clock.now += 2.0
    assert gateway.read_processes() == {0: []}
    assert gpu.calls["nvmlDeviceGetProcessUtilization"] == 2  # not asked for an empty list


def test_mig_instances_are_listed_with_their_processes_and_readings() -> None:
    gpu = FakeGpu(gpm=True, gpm_values={2: 40.0, 5: 20.0})
    gateway, nvml = opened(gpu)
    small, large = nvml.health[0].mig = mig_instances(gpu, ["1g.18gb", "3g.71gb"])
    small.processes = [(5151, 9 << 30)]
    small.memory_used = 9 << 30
    small.gpm_values = {2: 55.0, 5: 30.0}
    gateway.open()
    (info,) = gateway.gpus
    assert info.mig
    assert info.mig_instances == [
        MigInstance(small.uuid, 1, 0, "1g.18gb", 18 << 30, 16),
        MigInstance(large.uuid, 2, 0, "3g.71gb", 71 << 30, 48),
    ]
    (processes,) = gateway.read_processes().values()
    assert [(p.pid, p.gpu_instance, p.compute_instance) for p in processes] == [(5151, 1, 0)]
    first = gateway.read_instances()[0]
    assert [(m.gpu_instance, m.values["mem_used"]) for m in first] == [(1, 9 << 30), (2, 0)]
    assert "sm_active" not in first[0].values  # GPM needs two samples
    nvml.clock.now += 2.0
    second = gateway.read_instances()[0]
    assert second[0].values["sm_active"] == 55.0 and second[0].values["tensor_active"] == 30.0
    assert "pcie_tx" not in second[0].values  # the links are the whole GPU's
    assert small.gpm_requests and small.gpm_spans == [2.0]
    gateway.close()
    assert len(nvml.freed) == len(nvml.allocated)


def test_a_gpu_not_in_mig_mode_reads_nothing_of_mig() -> None:
    gateway, _ = opened(FakeGpu())
    gateway.open()
    assert not gateway.gpus[0].mig and gateway.gpus[0].mig_instances == []
    assert gateway.read_instances() == {}


def test_xids_arrive_as_events_from_their_own_thread() -> None:
    gateway, nvml = opened(FakeGpu(uuid="GPU-0"), FakeGpu(uuid="GPU-1"))
    gateway.open()
    events, stopping = [], threading.Event()
    thread = threading.Thread(target=watch_xid, args=(gateway, events.append, stopping))
    thread.start()
    try:
        wait_for(lambda: nvml.registered == {0, 1}, what="both GPUs registered")
        nvml.inject_xid(1, 79)
        nvml.inject_xid(0, 13)
        wait_for(lambda: len(events) == 2, what="two XIDs")
    finally:
        stopping.set()
        thread.join(5)
    assert not thread.is_alive() and nvml.calls["nvmlEventSetFree"] == 1
    fell, fault = events
    assert (fell.kind, fell.gpu, fell.value, fell.severity, fell.state) == (
        "xid",
        1,
        79,
        "critical",
        "once",
    )
    assert fell.detail == "XID 79: GPU has fallen off the bus"
    assert (fault.gpu, fault.severity) == (0, "warning")
