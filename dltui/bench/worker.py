"""The benchmark worker: a child process that runs one plan and reports as frames on stdout.

The agent never imports a framework; this process does, so a framework crash, an out-of-memory
error or a hung kernel kills the worker and not the agent. Protocol: one `run` frame on stdin;
then `progress` and `result` frames on stdout and a final `job_end`. SIGTERM asks it to stop
after the current case; the end of stdin means the agent is gone (even kill -9), and the worker
and its ranks end at once rather than hold a GPU for nobody.

    python -m dltui.bench.worker
"""

from __future__ import annotations

import dataclasses
import os
import signal
import sys
import threading
import time
import traceback
from io import BufferedReader
from typing import cast

from dltui.bench.cuda_guard import NoCuda, check_auto
from dltui.plans.check import check_plan
from dltui.plans.names import CPUS_ENV
from dltui.plans.occupancy import mig_uuid
from dltui.protocol.bench_plans import ModelPlan
from dltui.protocol.bench_results import KernelResult, ModelResult
from dltui.protocol.errors import ProtocolError
from dltui.protocol.framing import FrameDecoder, encode_frame
from dltui.protocol.messages import JobEnd, JobProgress, JobResult, Message, Run
from dltui.protocol.stream import claim_stdout, read_message
from dltui.protocol.wire import to_wire


def read_run(source: BufferedReader) -> Run:
    try:
        message = read_message(source, FrameDecoder())
    except EOFError:
        raise SystemExit("dltui worker: no run frame on stdin") from None
    except ProtocolError as exc:
        raise SystemExit(f"dltui worker: no run frame on stdin: {exc}") from None
    if not isinstance(message, Run):
        raise SystemExit(f"dltui worker: expected a run frame, got {message.TYPE}")
    return message


def _exit_when_orphaned(source: BufferedReader) -> None:
    """At the end of stdin (the agent is gone, even by SIGKILL), end this worker and its ranks:
    a rank asked to stop by its own stdin's end stops only between steps, or never while it
    waits in a collective for a peer that has stopped first."""
    while source.read1(65536):
        pass
    if os.getpgid(0) == os.getpid():  # its own group, as the agent starts it: the ranks' too
        os.killpg(0, signal.SIGKILL)
    os._exit(3)


def main() -> int:
    if (cpus := os.environ.get(CPUS_ENV)) and hasattr(os, "sched_setaffinity"):
        # The agent keeps its threads to one CPU; a benchmark runs on every CPU it could.
        os.sched_setaffinity(0, {int(cpu) for cpu in cpus.split(",")})
    frames = claim_stdout()
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    stdin = cast(BufferedReader, sys.stdin.buffer)  # as CPython makes it; typeshed: BinaryIO
    run = read_run(stdin)
    threading.Thread(target=_exit_when_orphaned, args=(stdin,), daemon=True).start()

    def emit(message: Message) -> None:
        frames.write(encode_frame(to_wire(message)))

    plan = run.what
    target = plan.device if plan is not None else None
    if plan is not None and (uuid := mig_uuid(plan.device)) is not None:
        # One MIG instance: CUDA sees it alone, as device 0, before any framework loads.
        os.environ["CUDA_VISIBLE_DEVICES"] = uuid
        plan = dataclasses.replace(plan, device="cuda")

    case: tuple[int, float] | None = None
    """The `done` of the case under way, and when it began (monotonic)."""

    def on_result(result: KernelResult | ModelResult) -> None:
        if target is not None and mig_uuid(target):  # the instance it ran on, not "cuda:0"
            result = dataclasses.replace(result, device=target)
        if isinstance(result, KernelResult) and case is not None:
            # Timed here: a short case's progress and result may reach a client together.
            result = dataclasses.replace(result, case_s=time.monotonic() - case[1])
        emit(JobResult.of(run.job, result))

    def on_progress(done: int, total: int, label: str, fraction: float | None = None) -> None:
        nonlocal case
        if case is None or case[0] != done:  # a new `done` starts a case; the same, a fraction
            case = (done, time.monotonic())
        emit(JobProgress(run.job, done, total, label, fraction))

    try:
        if plan is None:
            raise ValueError("a run carries exactly one of a kernel plan and a model plan")
        check_plan(plan)
        check_auto(plan.framework, plan.device)
        # The frameworks load in these modules, in the worker only.
        if isinstance(plan, ModelPlan):
            from dltui.bench.training import run_models

            run_models(plan, on_result, on_progress, lambda: stopping)
        else:
            from dltui.bench.suite import run_plan

            run_plan(plan, on_result, on_progress, lambda: stopping)
    except NoCuda as exc:
        emit(JobEnd(run.job, "refused", str(exc), time.time()))
        return 1
    except Exception as exc:  # anything a framework raises: report it, then fail
        traceback.print_exc()
        emit(JobEnd(run.job, "failed", f"{type(exc).__name__}: {exc}", time.time()))
        return 1
    emit(JobEnd(run.job, "cancelled" if stopping else "done", None, time.time()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
