"""What `dltui predict` says for the whitepaper's four CNNs on H200 servers, from what was
measured on the H200: each model's one-GPU run with its step profile (bf16, compiled, its
default batch: docs/results/profiles-h200.json, from `dltui bench models --model
resnet50,vgg16,googlenet,alexnet --gpus 1 --json`), and NCCL all-reduce between two H200s over
NVLink (tests/fixtures/h200x2-kernels.dlrec), over networks of 100 and 400 Gbit/s a server.

    python benchmarks/predict_h200.py > TABLES   (the tables of docs/results/predict-h200.md)
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROFILES = Path("docs/results/profiles-h200.json")
NVLINK = Path("tests/fixtures/h200x2-kernels.dlrec")
MODELS = ("resnet50", "vgg16", "googlenet", "alexnet")
LAYOUTS = "1x1,1x8,2x4,4x2,8x1,8x8"


def main() -> int:
    for network in (100, 400):
        for model in MODELS:
            args = ["predict", str(PROFILES), str(NVLINK), "--model", model, "--network-gbit",
                    str(network), "--layouts", LAYOUTS, "--target-efficiency", "0.9"]  # fmt: skip
            done = subprocess.run([sys.executable, "-m", "dltui", *args], capture_output=True,
                                  text=True, cwd=ROOT, check=True)  # fmt: skip
            print(f"### {model}, {network} Gbit/s a server\n")
            print("`" + " ".join(["dltui", *args]) + "`\n")
            print("```\n" + done.stdout.rstrip() + "\n```\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
