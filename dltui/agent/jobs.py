"""Benchmark jobs: one worker process at a time, its frames relayed to every client.

One at a time because two benchmarks sharing a GPU would each measure the other. The worker is
a child process (`dltui.bench.worker`); whatever happens to it — a crash, the OOM killer, a hang
past the plan's timeout, a cancel — the agent stays up and every client gets exactly one
`job_end` saying how the job ended.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass

import psutil

from dltui.agent import job_folders
from dltui.agent.occupancy import Occupancy
from dltui.plans.check import PlanError, check_plan
from dltui.plans.names import MULTICAST_OFF, NVML_GPUS_ENV, RUN_FOLDERS_ENV
from dltui.protocol.bench_plans import ModelPlan, Plan
from dltui.protocol.child import ChildStream, spawn
from dltui.protocol.errors import ProtocolError
from dltui.protocol.messages import JobEnd, JobProgress, JobResult, JobState, Message, Run

log = logging.getLogger(__name__)

WORKER_COMMAND = (sys.executable, "-m", "dltui.bench.worker")
STOP_GRACE = 3.0  # seconds between asking a worker to stop and killing it
WORKER_ENV = {
    **MULTICAST_OFF,
    "TF_CPP_MIN_LOG_LEVEL": "2",
    "PYTHONUNBUFFERED": "1",
}


@dataclass
class _Job:
    id: str
    plan: Plan
    worker: ChildStream | None = None
    cancelled: bool = False


def data_dir_refusal(plan: Plan, allowed: tuple[str, ...]) -> str | None:
    """Why a time-to-accuracy plan may not read its folder here, or None. Only folders the
    agent's own config allows (data_dirs) and those inside them are read; the answer is the
    same whether a refused path exists or not, and a refused path is never looked at."""
    if not isinstance(plan, ModelPlan) or plan.data_dir is None:
        return None
    folder = os.path.normpath(plan.data_dir)  # no `..` climbing out of an allowed folder
    inside = [root for root in allowed if os.path.commonpath((root, folder)) == root]
    # Inside one, symbolic links must not lead out of it either.
    real = os.path.realpath(folder) if inside else None
    if real is not None and any(
        os.path.commonpath((os.path.realpath(root), real)) == os.path.realpath(root)
        for root in inside
    ):
        return None
    return "data_dir is not among the folders this agent's config allows (data_dirs)"


class Jobs:
    def __init__(
        self,
        publish: Callable[[Message], None],
        data_dirs: tuple[str, ...] = (),
        occupancy: Occupancy | None = None,
        gpus: int = 0,
    ) -> None:
        self._publish = publish
        self.gpus = gpus
        """GPUs NVML reports here: a worker on "auto" whose framework cannot use them refuses."""
        self.data_dirs = data_dirs
        """Folders (absolute, normalised) that time-to-accuracy plans may read."""
        self.occupancy = occupancy
        """Someone else's work on the GPUs: a plan for them is refused unless forced."""
        self.current: _Job | None = None
        self._task: asyncio.Task[None] | None = None

    def start(self, job: str, plan: Plan | None) -> None:
        """Start a job, or refuse it at once with a `job_end` that says why."""
        if plan is None:
            reason = "bad plan: a run carries exactly one of a kernel plan and a model plan"
            self._publish(JobEnd(job, "refused", reason, time.time()))
            return
        try:
            check_plan(plan)
        except PlanError as exc:
            self._publish(JobEnd(job, "refused", f"bad plan: {exc}", time.time()))
            return
        if (refusal := data_dir_refusal(plan, self.data_dirs)) is not None:
            self._publish(JobEnd(job, "refused", refusal, time.time()))
            return
        if self.current is not None:
            reason = f"busy: job {self.current.id} is running; cancel it or wait"
            self._publish(JobEnd(job, "refused", reason, time.time()))
            return
        if self.occupancy is not None and (refusal := self.occupancy.refusal(plan)) is not None:
            self._publish(JobEnd(job, "refused", refusal, time.time()))
            return
        self.current = _Job(job, plan)
        self._task = asyncio.create_task(self._supervise(self.current))

    def cancel(self, job: str) -> bool:
        current = self.current
        if current is None or current.id != job:
            return False
        current.cancelled = True
        if current.worker is not None and current.worker.process.returncode is None:
            current.worker.send_signal(signal.SIGTERM)
            asyncio.get_running_loop().call_later(STOP_GRACE, self._kill, current)
        return True

    async def stop(self) -> None:
        """Cancel what runs and wait for it to end (the agent is shutting down)."""
        if self.current is not None:
            self.cancel(self.current.id)
        if self._task is not None:
            await asyncio.wait({self._task}, timeout=STOP_GRACE + 2)

    @staticmethod
    def _kill(job: _Job) -> None:
        """Kill the worker and whatever it started (all-reduce ranks): its process group."""
        if job.worker is not None and job.worker.process.returncode is None:
            job.worker.kill_group()

    async def _supervise(self, job: _Job) -> None:
        state, error = await self._run_worker(job)
        # Free before telling: a client that starts its next job on `job_end` is not refused.
        self.current = None
        self._publish(JobEnd(job.id, state, error, time.time()))

    async def _run_worker(self, job: _Job) -> tuple[JobState, str | None]:
        """Run the worker to its end; how the job ended, and why if it failed. The job has a
        folder of its own, where its runs keep theirs, removed once the worker and all it
        started are gone: a run killed mid-way cannot clean up after itself. Its name says
        which agent owns it, so the next agent removes it if this one is killed first."""
        try:
            made = tempfile.TemporaryDirectory(
                prefix=job_folders.prefix(), ignore_cleanup_errors=True
            )
        except OSError as exc:  # a full disk, a temporary folder gone
            return "failed", f"cannot make the job's folder: {exc}"
        with made as folder:
            given = {NVML_GPUS_ENV: str(self.gpus), RUN_FOLDERS_ENV: folder}
            environment = os.environ | WORKER_ENV | given | _gloo_interface(job.plan)
            return await self._worker_to_its_end(job, environment)

    async def _worker_to_its_end(
        self, job: _Job, environment: dict[str, str]
    ) -> tuple[JobState, str | None]:
        try:
            worker = await spawn(WORKER_COMMAND, "the worker", environment)
        except OSError as exc:
            return "failed", f"cannot start the benchmark worker: {exc}"
        job.worker = worker
        if job.cancelled:  # while the worker started: `cancel` had no process to stop yet
            self.cancel(job.id)
        try:
            # stdin stays open: its end tells the worker the agent is gone.
            await worker.send(Run.of(0, job.id, job.plan))
            async with asyncio.timeout(job.plan.timeout_s):
                reported = await self._relay(job, worker)
                await worker.process.wait()
            await worker.said_all()
        except TimeoutError:
            return "failed", f"timed out after {job.plan.timeout_s:g} s"
        except ConnectionError as exc:  # the worker died before it read its plan
            await worker.process.wait()
            return "failed", worker.death() + f" ({exc})"
        finally:
            if worker.process.returncode is None:
                self._kill(job)
                await worker.process.wait()
            worker.kill_group()  # anything the worker left behind
            worker.writer.close()
            worker.forget_stderr()
        if job.cancelled:
            return "cancelled", None
        if reported is not None:
            return reported.state, reported.error
        if worker.process.returncode != 0:
            return "failed", worker.death()
        return "failed", "the worker exited without saying how the job ended"

    async def _relay(self, job: _Job, worker: ChildStream) -> JobEnd | None:
        """Pass the worker's frames on until it closes stdout; return its own `job_end`."""
        reported = None
        while True:
            try:
                message = await worker.receive()
            except EOFError:
                return reported
            except ProtocolError as exc:
                log.error("job %s: bad frame from the worker: %s", job.id, exc)
                self._kill(job)
                return None
            if not isinstance(message, (JobProgress, JobResult, JobEnd)) or message.job != job.id:
                log.error("job %s: unexpected %s from the worker", job.id, message.TYPE)
            elif isinstance(message, JobEnd):
                reported = message  # told once the process is gone and the GPU free
            else:
                self._publish(self._stamped(job, message))

    def _stamped(self, job: _Job, message: Message) -> Message:
        """A result with the work it shared the GPUs with, where there was any."""
        others = self.occupancy.others(job.plan) if self.occupancy is not None else None
        if others is None or not isinstance(message, JobResult):
            return message
        result = message.result or message.model
        assert result is not None
        return JobResult.of(message.job, dataclasses.replace(result, others=others))


def _gloo_interface(plan: Plan) -> dict[str, str]:
    """For a run across servers, Gloo's interface: the one that reaches the rendezvous.

    Left alone, Gloo binds to what this host's name resolves to, which is often 127.0.1.1
    (Debian's /etc/hosts) and then tells the other servers to call it there. A user's own
    GLOO_SOCKET_IFNAME wins.
    """
    if plan.cluster is None or "GLOO_SOCKET_IFNAME" in os.environ:
        return {}
    name = interface_towards(plan.cluster.master_addr)
    return {"GLOO_SOCKET_IFNAME": name} if name else {}


def interface_towards(host: str) -> str | None:
    """The network interface this machine would send from to reach `host`, or None."""
    try:
        family, kind, _, _, address = socket.getaddrinfo(host, 9, type=socket.SOCK_DGRAM)[0]
        with socket.socket(family, kind) as probe:
            probe.connect(address)  # a UDP connect sends nothing; it only picks the route
            local = probe.getsockname()[0]
    except (OSError, UnicodeError):  # UnicodeError: a name part empty or over 63 characters
        return None
    for name, addresses in psutil.net_if_addrs().items():
        if any(entry.address.split("%")[0] == local for entry in addresses):
            return name
    return None
