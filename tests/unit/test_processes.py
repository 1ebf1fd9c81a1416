"""Whose work is on a GPU: cgroup paths of each runtime, Kubernetes and Slurm read into a
place, and real processes described with their owner (user, command line, start, CPU, RSS)."""

from __future__ import annotations

import os
import subprocess
import sys

import msgpack
import psutil
import pytest

from dltui.plans.occupancy import describe_others_work, describe_owner
from dltui.protocol.messages import Sample
from dltui.protocol.samples import GpuProcess, GpuSample, HostSample
from dltui.protocol.wire import to_wire
from dltui.telemetry.processes import Owners, Placement, command_text, placement
from tests.conftest import wait_for
from tests.fakes.hostile import HOSTILE_COMM, NAMED

ID = "3f2a1b9c0d4e" + "5" * 52
POD = "8d4a0d6e-3d36-4c9e-9b1e-2f7c1d2b7a10"


@pytest.mark.parametrize(
    ("cgroup", "expected"),
    [
        (f"12:pids:/docker/{ID}\n0::/", Placement(ID, "docker")),
        (f"0::/system.slice/docker-{ID}.scope", Placement(ID, "docker")),
        (f"0::/machine.slice/libpod-{ID}.scope/container", Placement(ID, "podman")),
        (f"0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-{ID}.scope",
         Placement(ID, "podman")),
        (f"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
         f"{POD.replace('-', '_')}.slice/cri-containerd-{ID}.scope",
         Placement(ID, "containerd", POD)),
        (f"0::/kubepods.slice/kubepods-pod{POD.replace('-', '_')}.slice/crio-{ID}.scope",
         Placement(ID, "cri-o", POD)),
        (f"4:memory:/kubepods/besteffort/pod{POD}/{ID}", Placement(ID, None, POD)),
        ("4:memory:/slurm/uid_1000/job_41233/step_0/task_0", Placement(job="41233")),
        ("0::/system.slice/slurmstepd.scope/job_41234/step_batch/user/task_0",
         Placement(job="41234")),
        ("0::/user.slice/user-1000.slice/session-3.scope", Placement()),
        ("0::/job_7", Placement()),  # a folder called job_* outside Slurm is nobody's job
        (f"0::/system.slice/crio-conmon-{ID}.scope", Placement()),  # the runtime's monitor
    ],
)  # fmt: skip
def test_a_cgroup_path_says_where_a_process_runs(cgroup: str, expected: Placement) -> None:
    assert placement(cgroup) == expected


def test_command_lines_are_shell_quoted_and_cut() -> None:
    assert command_text(["python", "train.py", "--name", "my run"]) == (
        "python train.py --name 'my run'"
    )
    long = command_text(["x" * 300])
    assert long is not None and len(long) == 200 and long.endswith("…")
    assert command_text([]) is None


def described(owners: Owners, pid: int) -> GpuProcess:
    ((process,),) = owners.describe({0: [GpuProcess(pid, 1 << 30)]}).values()
    return process


def test_a_real_process_with_its_user_command_line_start_and_slurm_job(tmp_path) -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "train"],
                             env=os.environ | {"SLURM_JOB_ID": "41233"})  # fmt: skip
    try:
        wait_for(lambda: "train" in psutil.Process(child.pid).cmdline(), what="the child's exec")
        owners = Owners(proc=tmp_path)  # no cgroup files there: the job comes from its env
        first = described(owners, child.pid)
        assert first.user == psutil.Process().username()
        assert first.command is not None and "time.sleep(60)" in first.command
        assert first.command.endswith(" train")
        assert abs(first.started - psutil.Process(child.pid).create_time()) < 1e-6
        assert first.rss and first.memory == 1 << 30
        assert first.cpu is None  # CPU % needs two reads
        assert first.own  # a child of this process: "ours"
        # Its environment claims a job its cgroup does not confirm: a claim, never the job.
        assert first.job is None and first.job_claimed == "41233"
        assert "claims job 41233" in describe_owner(first)
        assert owners.describe({}) == {}  # a round where no GPU's list was due forgets nothing
        assert described(owners, child.pid).cpu is not None
    finally:
        child.kill()
        child.wait()


def test_a_process_of_a_kubernetes_pod_is_named_from_the_kubelets_log_links(tmp_path) -> None:
    me = os.getpid()
    (tmp_path / "proc" / str(me)).mkdir(parents=True)
    cgroup = (
        f"0::/kubepods.slice/kubepods-pod{POD.replace('-', '_')}.slice/cri-containerd-{ID}.scope"
    )
    (tmp_path / "proc" / str(me) / "cgroup").write_text(cgroup + "\n")
    (tmp_path / "proc" / str(me) / "status").write_text(f"Name:\tpython\nNSpid:\t{me}\t7\n")
    logs = tmp_path / "containers"
    logs.mkdir()
    (logs / f"train-0_ml_trainer-{ID}.log").touch()
    (logs / f"other-1_ml_side-{'e' * 64}.log").touch()
    process = described(Owners(proc=tmp_path / "proc", pod_logs=logs), me)
    assert (process.container, process.runtime, process.pod) == (ID, "containerd", POD)
    assert (process.pod_name, process.container_name, process.ns_pid) == (
        "ml/train-0",
        "trainer",
        7,
    )
    assert describe_owner(process).endswith("(pod ml/train-0, container trainer)")


def test_a_gone_process_keeps_what_nvml_said_and_nothing_invented() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    wait_for(lambda: not psutil.pid_exists(child.pid), what="the child gone")
    assert described(Owners(), child.pid) == GpuProcess(child.pid, 1 << 30)


def test_an_ending_process_is_still_described_and_still_ours() -> None:
    """A process's CUDA context is torn down after its memory: NVML lists it ~170 ms more,
    while psutil, finding no memory, calls it a zombie and its command line unreadable. That
    dropped everything else said of it, so the agent's own ending worker was someone's "pid N"
    and refused the job sent the moment it ended (seen on an H100). An unreaped child is in
    that state for good: what still reads, whose it is first, is kept."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        wait_for(lambda: psutil.Process(child.pid).status() == psutil.STATUS_ZOMBIE,
                 what="the child ended, not yet reaped")  # fmt: skip
        ending = described(Owners(), child.pid)
        assert ending.own and ending.user == psutil.Process().username()
        assert ending.command is None  # unreadable now, not invented
        assert describe_others_work({0: [ending]}) is None
    finally:
        child.wait()


def test_busy_words_name_others_work_and_leave_dltuis_own_out() -> None:
    alice = GpuProcess(1, user="alice", job="41233")
    bob = GpuProcess(2, user="bob", container=ID, runtime="docker")
    ours = GpuProcess(3, user="alice", own=True)
    assert describe_others_work({0: [alice, ours], 1: [bob], 2: [bob]}) == (
        "user alice (job 41233) on GPU 0; user bob (docker 3f2a1b9c0d4e) on GPU 1, 2"
    )
    assert describe_others_work({0: [ours]}) is None
    assert describe_owner(GpuProcess(9)) == "pid 9"


def test_an_older_agents_processes_are_nobodys_work_and_an_unseen_one_is_anyones() -> None:
    older = GpuProcess(4242, 70 << 30, "python")  # named, no owner: an agent before owners
    unseen = GpuProcess(77, 1 << 30)  # in a PID namespace the agent cannot see into
    assert describe_others_work({0: [older]}) is None
    assert describe_others_work({0: [older, unseen]}) == "pid 77 on GPU 0"


# prctl(PR_SET_NAME) with the bytes in argv[1] (hex), then wait for stdin to close.


def test_a_process_named_with_any_bytes_is_described_and_can_be_sent(tmp_path) -> None:
    """Any user names their process with any bytes (comm, argv, environment): the agent
    describes it in valid Unicode (replacement characters) and msgpack encodes it."""
    child = subprocess.Popen([sys.executable, "-c", NAMED, HOSTILE_COMM.hex(), b"\xff\x1b[2J"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             env=os.environ | {"SLURM_JOB_ID": "\x1b[31m42"})  # fmt: skip
    try:
        assert child.stdout is not None and child.stdout.readline() == b"\n"  # named by now
        process = described(Owners(proc=tmp_path), child.pid)
        assert process.name == "\ufffd\ufffd\x1b]0;x\x07[/]"  # data: the client shows it
        assert process.command is not None and process.command.endswith("\ufffd\x1b[2J'")
        assert process.job is None and process.job_claimed == "\\x1b[31m42"
        msgpack.packb(to_wire(Sample(1, 0.0, 0.0, HostSample({}), [GpuSample(0, "ok", {}, {},
                                                                     [process])])))  # fmt: skip
    finally:
        child.kill()
        child.wait()


def test_one_unreadable_process_costs_its_own_row_only(tmp_path) -> None:
    """What /proc says about a process may be anything its owner made it (a delegated cgroup's
    folder names) or vanish between reads: that process loses its details, the others none."""
    me, other = os.getpid(), os.getppid()
    for pid, cgroup, status in ((me, b"0::/user.slice/\xff\x1b[2J\n", b"NSpid:\t%d\n" % me),
                                (other, b"0::/\n", b"NSpid:\tnot-a-number\n")):  # fmt: skip
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "cgroup").write_bytes(cgroup)
        (tmp_path / str(pid) / "status").write_bytes(status)
    owners = Owners(proc=tmp_path)
    ((mine, bad),) = owners.describe({0: [GpuProcess(me, 1), GpuProcess(other, 2)]}).values()
    assert mine.user == psutil.Process().username() and mine.command
    assert bad == GpuProcess(other, 2)  # its PID and memory, as NVML said: nothing invented
