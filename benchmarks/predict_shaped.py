"""`dltui predict` against real data-parallel training on shaped networks.

Hosts are network namespaces (agents/netns-cluster.sh), each with its own address, its link
shaped with tc (tbf, each way) ("off": unshaped) and its CPU held to a fixed quota through a
cgroup (with --own-cpus, its threads also kept to a CPU of its own), so that the hosts compute
as separate machines would on a 2-core box. For each link rate, it measures the
all-reduce curves across 2 hosts and across 4 (per framework), then for each workload,
interleaved and repeated, for 2 hosts and then 4: the one-host profile (`dltui bench models
--gpus 1`) and real training across the hosts (`--scale-out`). The profile is taken on each of
those hosts at once, each training alone, and the one nearest their mean is used: every host
then computes beside as many others on this box as it will in the run across them (four
hosts' quotas fill 1.6 of a 2-core machine's CPUs; four computing at once ran GoogLeNet 15%
slower each than two did). Each multi-host run is predicted by `dltui predict` fed only with
that profile and the curves of the same links (each layout takes the curve measured across the
most hosts up to its own); the medians over the repeats are compared.

    sudo python benchmarks/predict_shaped.py [--rates 1gbit,300mbit,100mbit,off] [--hosts 2,4]
        [--repeats 3] [--frameworks torch,tensorflow] [--quota 0.4] [--own-cpus]
        [--json docs/results/predict-shaped.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.netns import Cluster, unavailable  # noqa: E402

SECRET = "a-secret-for-shaped-network-runs\n"
PROFILE_LENGTH = 3
"""A one-host profile times this many times the steps of the run it predicts. It costs a
fraction of that run (no link to wait on), and every prediction takes its mean step and the
spread of its steps: one step stalled by other work among four moved both by a quarter
(a profile's steps of 0.31, 0.44, 0.33 and 0.68 s predicted a run across hosts 16% slow)."""


@dataclass(frozen=True)
class Workload:
    """A training configuration on the CPU, named by what it stresses."""

    name: str
    framework: str
    model: str
    image_size: int
    batch: int

    def args(self) -> list[str]:
        return ["--framework", self.framework, "--model", self.model, "--image-size",
                str(self.image_size), "--batch", str(self.batch), "--classes", "10",
                "--device", "cpu", "--gpus", "1"]  # fmt: skip


WORKLOADS = {
    # GoogLeNet's 22 MB of gradients beside a step of ~0.1 s: communication dominates.
    "high": ("googlenet", 32, 4),
    # ResNet-20's 1.1 MB of gradients beside a step of ~0.5 s: mostly hidden behind backward.
    "low": ("resnet20", 32, 32),
}


def workloads(frameworks: list[str], ratios: tuple[str, ...] = tuple(WORKLOADS)) -> list[Workload]:
    return [Workload(f"{framework} {model} b{batch} ({ratio} gradient/compute)", framework,
                     model, size, batch)
            for framework in frameworks
            for ratio, (model, size, batch) in WORKLOADS.items() if ratio in ratios]  # fmt: skip


class Runner:
    """The CLI against the cluster's agents, each call's JSON kept in `folder`."""

    def __init__(self, cluster: Cluster, folder: Path, steps: int, warmup: int) -> None:
        self.cluster, self.folder, self.steps, self.warmup = cluster, folder, steps, warmup
        self.secret = folder / "secret"
        self.secret.write_text(SECRET)
        self.secret.chmod(0o600)
        self.count = 0
        self.retries: list[str] = []

    def _dltui(self, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
        """Run dltui; a run that fails is tried once more (a Gloo rendezvous across four
        namespaces now and then aborts), and the retry is counted."""
        command = [sys.executable, "-m", "dltui", *args]
        for _attempt in (1, 2):
            done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT,
                                  timeout=timeout)  # fmt: skip
            if done.returncode == 0:
                return done
            self.retries.append(f"{' '.join(args[:2])}: {done.stderr.strip()[-300:]}")
        raise RuntimeError(f"{' '.join(args[:3])}… exited {done.returncode}: {done.stderr}"
                           f"{self.cluster.log(1)[-2000:]}")  # fmt: skip

    def _agents(self, hosts: Iterable[int]) -> list[str]:
        found = ["--secret-file", str(self.secret)]
        for host in hosts:
            found += ["--agent", self.cluster.address(host)]
        return found

    def _out(self, what: str) -> Path:
        self.count += 1
        return self.folder / f"{self.count:03d}-{what}.json"

    def curve(self, framework: str, hosts: int) -> Path:
        """All-reduce across hosts 1 to `hosts`, one process each, the tiny set's sizes."""
        out = self._out(f"curve-{framework}-{hosts}hosts")
        self._dltui("bench", "kernels", "--framework", framework, "--kind", "allreduce",
                    "--set", "tiny", "--device", "cpu", "--gpus", "1", "--max-seconds", "1",
                    *self._agents(range(1, hosts + 1)), "--json", str(out))  # fmt: skip
        return out

    def profile(self, workload: Workload, hosts: int) -> Path:
        """One-host runs on hosts 1 to `hosts` at once, each alone on its host and
        PROFILE_LENGTH times as long as the run across them; the one nearest their mean rate
        (the slowest-rank term of the prediction is the step-to-step spread; hosts alike but
        for noise should not add theirs). They start within a second or so of each other:
        three more warm-up steps let every one be computing while any is timed."""
        outs = {host: self._out(f"{workload.framework}-{workload.model}-alone-{host}-of-{hosts}")
                for host in range(1, hosts + 1)}  # fmt: skip

        def alone(host: int) -> None:
            self._dltui("bench", "models", *workload.args(), "--warmup", str(self.warmup + 3),
                        "--steps", str(self.steps * PROFILE_LENGTH), *self._agents([host]),
                        "--json", str(outs[host]))  # fmt: skip

        with ThreadPoolExecutor(hosts) as pool:
            list(pool.map(alone, outs))
        rates = {out: measured_rate(out) for out in outs.values()}
        mean = statistics.fmean(rates.values())
        return min(rates, key=lambda out: abs(rates[out] - mean))

    def train(self, workload: Workload, hosts: int) -> Path:
        out = self._out(f"{workload.framework}-{workload.model}-{hosts}hosts")
        self._dltui("bench", "models", *workload.args(), "--warmup", str(self.warmup),
                    "--steps", str(self.steps), "--scale-out", "--no-baseline",
                    *self._agents(range(1, hosts + 1)), "--json", str(out))  # fmt: skip
        return out

    def predict(self, profile: Path, curves: list[Path], hosts: int) -> dict[str, Any]:
        """`dltui predict`'s row for `hosts` servers of one process each."""
        done = self._dltui("predict", str(profile), *map(str, curves), "--layouts",
                           f"{hosts}x1", "--json", "-")  # fmt: skip
        (row,) = json.loads(done.stdout)["rows"]
        if row["predicted_images_per_s"] is None:
            raise RuntimeError(f"no prediction: {row['missing']}")
        return dict(row)


def measured_rate(path: Path) -> float:
    return float(_model(path)["images_per_s"])


def step_times(path: Path) -> list[float]:
    """Seconds per timed step: where a rate is off, whether one step was (a stall) or all."""
    return [round(float(step), 3) for step in _model(path)["step_times"]]


def inputs(profile: Path, curve: Path, prediction: dict[str, Any]) -> dict[str, object]:
    """What a prediction was made of, rounded: where one is off, which input was — the
    predicted step and its communication, the profile's wrapper overhead (a fraction of its
    step), and the curve's seconds and compute lost per size (bytes: (median s, lost s))."""
    overhead = (_model(profile).get("profile") or {}).get("overhead")
    sizes = {}
    for result in json.loads(curve.read_text())["results"]:
        if result.get("kind") == "allreduce" and not result.get("error"):
            lost = result.get("compute_lost_s")
            sizes[result["params"]["bytes"]] = (
                round(result["median_s"], 4),
                None if lost is None else round(lost, 4),
            )
    return {"step_s": round(prediction["predicted_step_s"], 3),
            "communication_s": round(prediction["predicted_communication_s"], 3),
            "overhead": overhead, "curve": sizes}  # fmt: skip


def _model(path: Path) -> dict[str, Any]:
    (model,) = json.loads(path.read_text())["models"]
    if model.get("error"):
        raise RuntimeError(model["error"])
    return dict(model)


def compare(
    runner: Runner,
    cluster: Cluster,
    rate: str,
    workload: Workload,
    hosts: list[int],
    repeats: int,
    curves: dict[int, Path],
    say: Callable[[str], None],
) -> list[dict[str, object]]:
    """Rows for one workload at one rate: each host count's medians over the repeats.
    `curves`: the all-reduce curve across each number of hosts measured."""
    predicted: dict[int, list[float]] = {n: [] for n in hosts}
    measured: dict[int, list[float]] = {n: [] for n in hosts}
    one_host: dict[int, list[float]] = {n: [] for n in hosts}
    steps: dict[int, list[dict[str, list[float]]]] = {n: [] for n in hosts}
    made_of: dict[int, list[dict[str, object]]] = {n: [] for n in hosts}
    for repeat in range(repeats):
        for n in hosts:
            profile = runner.profile(workload, n)
            one_host[n].append(measured_rate(profile))
            trained = runner.train(workload, n)
            measured[n].append(measured_rate(trained))
            steps[n].append({"one_host": step_times(profile), "measured": step_times(trained)})
            prediction = runner.predict(profile, list(curves.values()), n)
            predicted[n].append(float(prediction["predicted_images_per_s"]))
            used = curves[max(across for across in curves if across <= n)]  # as predict's
            made_of[n].append(inputs(profile, used, prediction))
            say(f"  {rate} {workload.name} {n} hosts, repeat {repeat + 1}: measured "
                f"{measured[n][-1]:.3g}, predicted {predicted[n][-1]:.3g} images/s")  # fmt: skip
    rows = []
    for n in hosts:
        rows.append({
            "config": f"{workload.name}, {n} hosts, {rate}",
            "framework": workload.framework,
            "model": workload.model,
            "batch": workload.batch,
            "hosts": n,
            "rate": rate,
            "predicted_images_per_s": statistics.median(predicted[n]),
            "measured_images_per_s": statistics.median(measured[n]),
            "predicted_runs": predicted[n],
            "measured_runs": measured[n],
            "one_host_runs": one_host[n],
            "step_s": steps[n],
            "predicted_from": made_of[n],
        })  # fmt: skip
    return rows


def error(row: dict[str, object]) -> float:
    predicted, measured = row["predicted_images_per_s"], row["measured_images_per_s"]
    assert isinstance(predicted, float) and isinstance(measured, float)
    return predicted / measured - 1


def run(
    rates: list[str],
    hosts: list[int],
    repeats: int,
    frameworks: list[str],
    quota: float,
    steps: int = 5,
    warmup: int = 2,
    say: Callable[[str], None] = print,
    keep: Path | None = None,
    ratios: tuple[str, ...] = tuple(WORKLOADS),
    own_cpus: bool = False,
) -> list[dict[str, object]]:
    """Every (rate, workload, host count) row; the cluster is made and removed here. `keep`:
    a folder for every run's JSON (else a temporary one); `own_cpus`: each host's threads
    keep to CPUs of their own (else they may run on any)."""
    with tempfile.TemporaryDirectory(prefix="dltui-shaped-") as folder:
        work = keep or Path(folder)
        work.mkdir(parents=True, exist_ok=True)
        cluster = Cluster(max(hosts), work / "cluster", cpu_quota=quota, own_cpus=own_cpus)
        try:
            runner = Runner(cluster, work, steps, warmup)
            cluster.start_agents("--secret-file", str(runner.secret))
            rows: list[dict[str, object]] = []
            for rate in rates:
                for host in range(1, max(hosts) + 1):
                    cluster.shape(host, rate)
                curves = {framework: {n: runner.curve(framework, n) for n in hosts if n > 1}
                          for framework in frameworks}  # fmt: skip
                for workload in workloads(frameworks, ratios):
                    rows += compare(runner, cluster, rate, workload, hosts, repeats,
                                    curves[workload.framework], say)  # fmt: skip
            for retry in runner.retries:
                say(f"  tried again after: {retry}")
            return rows
        finally:
            cluster.down()


def markdown(rows: list[dict[str, Any]]) -> str:
    """The table for docs/results/predict-shaped.md: medians, each run, and the error."""
    lines = [
        "| configuration | predicted images/s | measured images/s (median) | error "
        "| measured runs | one-host runs |",
        "| --- | ---: | ---: | ---: | --- | --- |",
    ]
    for row in rows:
        runs = ", ".join(f"{value:.3g}" for value in row["measured_runs"])
        alone = ", ".join(f"{value:.3g}" for value in row["one_host_runs"])
        lines.append(
            f"| {row['config']} | {row['predicted_images_per_s']:.3g} "
            f"| {row['measured_images_per_s']:.3g} | {error(row):+.1%} | {runs} | {alone} |"
        )
    errors = [abs(error(row)) for row in rows]
    lines.append(
        f"\n{len(rows)} configurations: worst {max(errors):.1%}, median "
        f"{statistics.median(errors):.1%} (targets: every one within 15%, median within 8%)."
    )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rates", default="1gbit,300mbit,100mbit")
    parser.add_argument("--hosts", default="2,4")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--frameworks", default="torch,tensorflow")
    parser.add_argument("--quota", type=float, default=0.4, help="CPUs each host may use")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--json", type=Path, help="write the rows here")
    parser.add_argument("--keep", type=Path, help="keep every run's JSON in this folder")
    parser.add_argument(
        "--own-cpus",
        action="store_true",
        help="keep each host's threads to CPUs of its own (by default they may run on any)",
    )
    parser.add_argument("--markdown", type=Path, help="write the table as Markdown here")
    args = parser.parse_args()
    if (why := unavailable()) is not None:
        print(f"predict_shaped: {why}", file=sys.stderr)
        return 2
    began = time.monotonic()
    rows = run(args.rates.split(","), [int(n) for n in args.hosts.split(",")], args.repeats,
               args.frameworks.split(","), args.quota, args.steps, keep=args.keep,
               own_cpus=args.own_cpus)  # fmt: skip
    print(f"{'configuration':<62} {'predicted':>10} {'measured':>10} {'error':>7}")
    for row in rows:
        print(f"{row['config']:<62} {row['predicted_images_per_s']:>10.3g} "
              f"{row['measured_images_per_s']:>10.3g} {error(row):>+7.1%}")  # fmt: skip
    errors = [abs(error(row)) for row in rows]
    took = time.monotonic() - began
    print(f"{len(rows)} configurations in {took:.0f} s: worst {max(errors):.1%}, "
          f"median {statistics.median(errors):.1%} (targets 15% / 8%)")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    if args.markdown:
        args.markdown.write_text(markdown(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
