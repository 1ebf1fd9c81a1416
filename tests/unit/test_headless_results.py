"""commands/headless.Results: the results a run's assertions judge are its own jobs' alone."""

from __future__ import annotations

from dltui.commands.headless import Results
from dltui.protocol.bench_results import KernelResult
from dltui.protocol.messages import JobResult

GEMM = KernelResult("gemm", "torch", "cpu", "fp32", "fwd", "64x64x64 NN", tflops=0.1)


class OneJobRun:
    """What Results asks of a PlanRun: the jobs it started."""

    def jobs(self) -> set[str]:
        return {"mine"}


def test_another_clients_results_are_not_this_runs():
    """An agent tells every client of every job: a second client's rnn results once failed
    (or passed) the first client's acceptance test."""
    results = Results()
    results("a:7070", JobResult("mine", GEMM))  # before the run is made: no job is ours yet
    results.run = OneJobRun()  # type: ignore[assignment]
    results("a:7070", JobResult("theirs", GEMM))
    results("a:7070", JobResult("mine", GEMM))
    assert results.kernels == [("a:7070", GEMM)]
