"""Issue 33's targets through the product path: `dltui bench models` for the GPT models and
`dltui bench kernels --kind attention` for the attention set, each run twice, then every
target checked and the two runs compared case by case.

    python benchmarks/transformer_targets.py --json docs/results/transformers-h200.json
    python benchmarks/transformer_targets.py --cpu --json /tmp/cpu.json   # the path, here

The JSON holds the first run as `dltui bench ... --json` writes it (`models` with `model`,
`tokens_per_s` and `mfu`; `results` with `kind` "attention", `direction`, `tflops` and
`backend`) and the second run's figures under `repeat`. The table goes to stdout.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MFU_TARGETS = {"gpt-1.3b": 0.60, "gpt-124m": 0.50}
ATTENTION_TARGETS = {("fwd", False): 600.0, ("fwd", True): 520.0, ("fwd+bwd", False): 520.0}
"""TFLOP/s, bf16, head dim 128, sequences of 2k and longer."""
AGREE = 0.03
"""Two runs of a case agree within this fraction."""


def bench(*args: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "run.json"
        command = [sys.executable, "-m", "dltui", "bench", *args, "--json", str(out)]
        subprocess.run(command, cwd=ROOT, check=True)
        return json.loads(out.read_text())


def runs(cpu: bool) -> dict[str, Any]:
    """Models, then attention; the second round after the first (not interleaved: a GPT run
    leaves the GPU warm for the attention cases in both rounds alike)."""
    device = ["--device", "cpu"] if cpu else []
    models = ["--model", "gpt-tiny"] if cpu else ["--model", "gpt-124m,gpt-350m,gpt-1.3b"]
    shapes = ("tiny", "fp32") if cpu else ("full", "bf16")
    attention = ["--set", shapes[0], "--precision", shapes[1]]
    rounds = []
    for _ in range(2):
        trained = bench("models", *models, *device)
        timed = bench("kernels", "--kind", "attention", *attention, *device)
        rounds.append({"models": trained["models"], "results": timed["results"],
                       "agents": trained["agents"]})  # fmt: skip
    first, second = rounds
    return first | {"repeat": {"models": second["models"], "results": second["results"]}}


def attention_key(result: dict[str, Any]) -> tuple[str, str]:
    return result["shape"], result["direction"]


def report(document: dict[str, Any]) -> list[str]:
    """The table, each target's verdict, and the cases whose two runs differ by more than 3%."""
    lines = [
        "| run | figure | second run | differs | target |",
        "| --- | ---: | ---: | ---: | --- |",
    ]
    again = {m["model"]: m for m in document["repeat"]["models"]}
    for model in document["models"]:
        if model["error"]:
            lines.append(f"| {model['model']} | error: {model['error']} | | | |")
            continue
        other = again.get(model["model"], {})
        target = MFU_TARGETS.get(model["model"])
        mfu = model["mfu"]
        verdict = "" if target is None else (
            f"MFU ≥ {target:.0%}: " + ("no MFU (unknown GPU)" if mfu is None else
                                       "met" if mfu >= target else f"not met ({mfu:.1%})")
        )  # fmt: skip
        lines.append(row(f"{model['model']} tokens/s", model["tokens_per_s"],
                         other.get("tokens_per_s"), verdict))  # fmt: skip
    repeat = {attention_key(r): r for r in document["repeat"]["results"]}
    for result in document["results"]:
        if result["error"]:
            lines.append(f"| {result['shape']} {result['direction']} | error | | | |")
            continue
        params = result["params"]
        target = ATTENTION_TARGETS.get((result["direction"], bool(params["causal"])))
        long_enough = params["head_dim"] == 128 and params["seq"] >= 2048
        verdict = ""
        if target is not None and long_enough:
            met = result["tflops"] >= target
            verdict = f"≥ {target:.0f}: " + ("met" if met else "not met")
        other = repeat.get(attention_key(result), {})
        label = f"{result['shape']} {result['direction']} ({result['backend']})"
        lines.append(row(label, result["tflops"], other.get("tflops"), verdict))
    return lines


def row(label: str, first: float | None, second: float | None, verdict: str) -> str:
    if first is None or second is None:
        return f"| {label} | {first} | {second} | | {verdict} |"
    differs = abs(first - second) / max(first, second)
    flag = "" if differs <= AGREE else " ✗"
    return f"| {label} | {first:,.4g} | {second:,.4g} | {differs:.1%}{flag} | {verdict} |"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, required=True, help="where the runs go")
    parser.add_argument("--cpu", action="store_true", help="the tiny GPT and shapes, on a CPU")
    args = parser.parse_args()
    document = runs(args.cpu)
    args.json.write_text(json.dumps(document, indent=1))
    print("\n".join(report(document)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
