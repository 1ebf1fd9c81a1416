"""What each training setting buys: one model on one GPU under several settings, the same rank
processes `dltui bench models` starts, printed as images/s and the ratio to the first variant
(measured in the same run, so the ratios hold on this machine whatever its clocks).

    python benchmarks/train_tuning.py --model resnet50 \\
        --variant batch=256 --variant batch=384 --variant batch=256,mode=reduce-overhead

A variant sets TrainJob fields (batch, precision, compile, channels_last, compile_mode) over
the defaults: bf16, channels-last, torch.compile (default mode).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, replace

from dltui.bench.ranks import supervise
from dltui.bench.training import TrainJob
from dltui.protocol.bench_results import ModelResult

FIELDS = {"batch": int, "precision": str, "compile": lambda v: v == "on",
          "channels_last": lambda v: v == "on", "mode": str}  # fmt: skip


def variant(base: TrainJob, text: str) -> TrainJob:
    changes = {}
    for item in filter(None, text.split(",")):
        name, _, value = item.partition("=")
        changes["compile_mode" if name == "mode" else name] = FIELDS[name](value)
    return replace(base, **changes)


def measure(job: TrainJob) -> ModelResult | str:
    found: list[ModelResult] = []
    command = [sys.executable, "-m", "dltui.bench.training.rank", "--job", json.dumps(asdict(job))]
    _, failure = supervise([command], ["run"], job.timeout_s, True, found.append,
                           lambda *_: None, lambda: False, ModelResult)  # fmt: skip
    return found[0] if found else failure or "no result"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="resnet50")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--variant", action="append", default=[], metavar="K=V,K=V")
    args = parser.parse_args()
    base = TrainJob(
        framework="torch", model=args.model, device="cuda", replicas=1, servers=1, batch=None,
        precision="bf16", channels_last=True, compile=True, warmup=10, steps=args.steps,
        image_size=224, classes=1000, learning_rate=0.1, data_dir=None, target_accuracy=None,
        holdout=0.2, max_epochs=1, timeout_s=900.0,
    )  # fmt: skip
    first = None
    for text in args.variant or [""]:
        result = measure(variant(base, text))
        if isinstance(result, str):
            print(f"{text or 'defaults':<40} failed: {result}", flush=True)
            continue
        rate = result.images_per_s or 0.0
        first = first or rate
        print(f"{text or 'defaults':<40} {rate:9,.1f} images/s ± {result.spread or 0:6.1f}"
              f"  {rate / first:5.3f}× the first", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
