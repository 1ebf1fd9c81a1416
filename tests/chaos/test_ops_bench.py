"""Benchmarks and the GPUs' other work, and pass/fail benchmarks, on the CPU tiny set: a bench
onto a (fake) GPU that someone else's process holds is refused unless forced, and a forced
run's results say whose work they shared it with; `--assert` and a plan file's [assert] table
pass, or fail with a line per case and exit 5."""

from __future__ import annotations

import json
import signal
import subprocess

import psutil
import pytest

from dltui.commands.exit_status import REFUSED, UNREACHABLE
from dltui.formatting import fmt_ratio
from dltui.protocol.messages import Subscribe
from tests.agents import connect, listed, until
from tests.conftest import ROOT, dltui_command, require, wait_for
from tests.fakes.gpu_work import hold, stop

require("torch")

TINY = ("--set", "tiny", "--kind", "gemm", "--iterations", "3", "--max-seconds", "0.2")


def bench(address: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(dltui_command("bench", "kernels", "--agent", address, *TINY, *args),
                          capture_output=True, text=True, cwd=ROOT, timeout=300)  # fmt: skip


async def test_a_bench_onto_busy_gpus_is_refused_unless_forced_and_then_flagged(
    fake_nvml,
    agent_factory,
    tmp_path,
):
    held = tmp_path / "held"
    held.mkdir()
    fake_nvml({"gpus": [{}], "contexts": str(held)})
    agent = agent_factory()
    holder = hold(held, 0)
    owner = f"user {psutil.Process().username()} on GPU 0"
    cuda = torch_has_cuda()
    try:
        client, _ = await connect(agent.address)  # wait for the agent's list to show it
        await client.stream.send(Subscribe(1, 10.0))
        await until(client.stream, listed(holder.pid))
        await client.close()
        refused = bench(agent.address)  # device auto: the GPU, if torch had one
        assert refused.returncode == REFUSED, refused.stderr
        assert f"job refused: in use: {owner}; force the run" in refused.stderr
        report = tmp_path / "forced.json"
        forced = bench(agent.address, "--force", "--json", str(report))
    finally:
        stop(holder)
    if not cuda:  # forced onto the GPU, but this PyTorch cannot reach it: refused, not the CPU
        assert forced.returncode == REFUSED, forced.stderr
        assert "was built without CUDA" in forced.stderr or "sees no GPU" in forced.stderr
    else:
        assert forced.returncode == 0, forced.stderr
        assert f"busy: {owner} (forced: the figures below shared the GPUs with it)" in (
            forced.stdout
        )
        results = json.loads(report.read_text())["results"]
        assert results and all(result["others"] == owner for result in results)
    cpu = bench(agent.address, "--device", "cpu")  # the CPU is not the GPU someone holds
    assert cpu.returncode == 0, cpu.stderr


def torch_has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def test_auto_on_gpus_the_framework_cannot_use_refuses_in_one_line(
    fake_nvml,
    agent_factory,
    tmp_path,
):
    """Two GPUs through NVML, a PyTorch without CUDA: "auto" refuses, saying why and how to
    choose the CPU; chosen on purpose, the CPU runs and every row says so."""
    if torch_has_cuda():
        pytest.skip("this PyTorch reaches a GPU: nothing to refuse")
    fake_nvml({"gpus": [{}, {}]})
    agent = agent_factory()
    report = tmp_path / "refused.json"
    refused = bench(agent.address, "--json", str(report))
    assert refused.returncode == REFUSED, refused.stderr
    import torch

    why = (
        f"job refused: this server has 2 GPUs but PyTorch {torch.__version__} was built "
        "without CUDA; install a CUDA build, or choose the CPU on purpose (device cpu)"
    )
    [line] = refused.stderr.splitlines()  # one line, after the server's name
    assert line.startswith("# ") and line.endswith(f": {why}")
    assert json.loads(report.read_text())["results"] == []  # nothing measured, nothing passed off
    chosen = bench(agent.address, "--device", "cpu")
    assert chosen.returncode == 0, chosen.stderr
    lines = chosen.stdout.splitlines()
    header = next(line for line in lines if line.startswith("kind"))
    rows = [line for line in lines if line.startswith("gemm")]
    column = header.index("device")
    assert rows and all(row[column : column + 6].strip() == "CPU" for row in rows)


def test_assertions_pass_or_fail_with_a_line_per_case(agent_factory):
    agent = agent_factory()
    passed = bench(agent.address, "--device", "cpu", "--assert", "tflops>=0 kind=gemm",
                   "--assert", "ratio>=0")  # fmt: skip
    assert passed.returncode == 5  # the tiny set has no published figures: nothing to match
    assert passed.stdout.splitlines()[-1] == "FAIL ratio>=0: no result matched"
    passed = bench(agent.address, "--device", "cpu", "--assert", "tflops>=0 kind=gemm")
    assert passed.returncode == 0, passed.stderr
    assert passed.stdout.splitlines()[-1] == "# 1 assertion passed"
    failed = bench(agent.address, "--device", "cpu", "--assert", "tflops>=1e6 precision=fp32")
    assert failed.returncode == 5
    lines = [line for line in failed.stdout.splitlines() if line.startswith("FAIL")]
    assert len(lines) == 4  # the tiny set's four GEMMs, each named with its figure
    assert lines[0].startswith("FAIL tflops>=1e6 precision=fp32: ")
    assert ": gemm 64x64x64 NN fwd fp32: " in lines[0] and lines[0].endswith(" TFLOP/s")


def test_a_baseline_puts_each_cases_ratio_to_it_in_the_table_and_marks_one_it_lacks(
    agent_factory, tmp_path
):
    """--baseline's ratios were only seen by assertions; the table has a `vs base` column: each
    case's rate over the baseline file's same case, 'not in base' where the file has none."""
    agent = agent_factory()
    first = tmp_path / "first.json"
    plain = bench(agent.address, "--device", "cpu", "--json", str(first))
    assert plain.returncode == 0, plain.stderr
    assert "vs base" not in plain.stdout  # no baseline, no column
    document = json.loads(first.read_text())
    lacked = document["results"].pop()["shape"]
    base = tmp_path / "base.json"
    base.write_text(json.dumps(document))
    again = tmp_path / "again.json"
    compared = bench(agent.address, "--device", "cpu", "--baseline", str(base), "--json",
                     str(again))  # fmt: skip
    assert compared.returncode == 0, compared.stderr
    lines = compared.stdout.splitlines()
    header = next(line for line in lines if line.startswith("kind"))
    end = header.index("vs base") + len("vs base")
    before = {row["shape"]: row["tflops"] for row in document["results"]}
    now = {row["shape"]: row["tflops"] for row in json.loads(again.read_text())["results"]}
    cells = {now_shape: line[end - 11 : end].strip() for line in lines if line.startswith("gemm")
             for now_shape in now if line[10:38].strip() == now_shape}  # fmt: skip
    assert len(cells) == 4 and cells.pop(lacked) == "not in base"
    assert cells == {shape: fmt_ratio(now[shape] / before[shape]) for shape in cells}


def test_a_plan_files_assert_table_decides_records_exit(agent_factory, tmp_path):
    agent = agent_factory()
    plan = tmp_path / "accept.toml"
    plan.write_text('[kernels]\nset = "tiny"\nkinds = ["gemm"]\ndevice = "cpu"\n'
                    'iterations = 3\nmax_seconds = 0.2\n\n[assert]\n'
                    'fast = "tflops>=1e6 shape=64x64x64"\n')  # fmt: skip
    done = subprocess.run(
        dltui_command("record", "-o", str(tmp_path / "a.dlrec"), "--plan", str(plan),
                      agent.address),
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert done.returncode == 5, done.stderr
    assert "dltui record: FAIL fast (tflops>=1e6 shape=64x64x64): " in done.stderr
    assert done.stderr.strip().endswith("1 assertion failure of 1 assertion")


def long_bench(address: str) -> subprocess.Popen[str]:
    """A bench of a minute a case, started: it is still running when a test stops something."""
    long = ("--set", "tiny", "--kind", "gemm", "--device", "cpu", "--iterations", "100000",
            "--max-seconds", "60")  # fmt: skip
    return subprocess.Popen(dltui_command("bench", "kernels", "--agent", address, *long),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT)  # fmt: skip


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_stopped_bench_cancels_its_jobs_on_the_agent(agent_factory, stop):
    """SIGTERM (timeout, CI, systemd) once killed the client and left the job running."""
    agent = agent_factory()
    bench = long_bench(agent.address)

    def workers() -> list[psutil.Process]:
        tree = psutil.Process(agent.process.pid).children(recursive=True)
        return [p for p in tree if "dltui.bench.worker" in " ".join(p.cmdline())]

    wait_for(workers, timeout=60, what="the job's worker")
    bench.send_signal(stop)
    _, said = bench.communicate(timeout=30)
    assert bench.returncode == 130 and "# cancelled" in said and "Traceback" not in said, said
    wait_for(lambda: not workers(), timeout=15, what="the worker gone")


def test_an_agent_that_dies_mid_job_ends_bench_as_unreachable_not_as_a_failed_job(agent_factory):
    """A CI step tells "the agent went away" (6) from "the benchmark failed on it" (1)."""
    agent = agent_factory()
    bench = long_bench(agent.address)
    tree = psutil.Process(agent.process.pid)
    wait_for(lambda: tree.children(recursive=True), timeout=60, what="the job's worker")
    # The agent first: killed after its worker, it could tell of the worker's death first.
    for process in [tree, *tree.children(recursive=True)]:
        process.kill()
    _, said = bench.communicate(timeout=60)
    assert bench.returncode == UNREACHABLE, said
    assert "lost the connection to the agent" in said and "Traceback" not in said
