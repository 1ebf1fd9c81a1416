"""What `dltui predict` says for the whitepaper's four CNNs on H200 servers, from what was
measured on the H200 (each model's one-GPU images/s, bf16, compiled, its default batch: the
recording tests/fixtures/h200-models.dlrec; NCCL all-reduce between two H200s over NVLink:
tests/fixtures/h200x2-kernels.dlrec), over networks of 100 and 400 Gbit/s a server. No step
profile was measured on the H200 yet (no GPU machine was lent when this was written), so the
gradients' timing is assumed (even over backward) and the tables say so.

    python benchmarks/predict_h200.py > docs/results/predict-h200.md (the tables part)
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dltui.recording.results import recorded_results  # noqa: E402

MODELS = ROOT / "tests" / "fixtures" / "h200-models.dlrec"
NVLINK = ROOT / "tests" / "fixtures" / "h200x2-kernels.dlrec"
LAYOUTS = "1x1,1x8,2x4,4x2,8x1,8x8"


def main() -> int:
    _, models = recorded_results(MODELS)
    for network in (100, 400):
        for _, result in models:
            assert result.images_per_s is not None
            command = [sys.executable, "-m", "dltui", "predict", str(NVLINK.relative_to(ROOT)),
                       "--model", result.model, "--batch", str(result.batch), "--images-per-s",
                       f"{result.images_per_s:.0f}", "--network-gbit", str(network),
                       "--layouts", LAYOUTS, "--target-efficiency", "0.9"]  # fmt: skip
            done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=True)
            print(f"### {result.model}, {network} Gbit/s a server\n")
            print("`" + " ".join(["dltui", *command[3:]]) + "`\n")
            print("```\n" + done.stdout.rstrip() + "\n```\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
