"""One training rank process: `python -m dltui.bench.training.rank --job JSON --report-fd N …`.

Reports JSON lines on the report pipe (bench/ranks.Reporter) and stops between steps once its
stdin closes, which also happens when its parent dies.
"""

from __future__ import annotations

import argparse
import json
import os
import traceback

from dltui.bench.backends import error_text
from dltui.bench.ranks import MULTICAST_OFF, Reporter, stdin_closed
from dltui.bench.training import TrainJob


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dltui.bench.training.rank")
    parser.add_argument("--job", required=True, type=json.loads)
    parser.add_argument("--report-fd", required=True, type=int)
    parser.add_argument("--rank", type=int, default=0)
    parser.add_argument("--world", type=int, default=1)
    parser.add_argument("--master", default="127.0.0.1:0", help="rank 0's HOST:PORT")
    parser.add_argument("--local-rank", type=int, default=0, help="GPU index on this host")
    parser.add_argument("--tf-workers", type=json.loads, default=None, help="TF workers' HOST:PORT")
    parser.add_argument("--tf-task", type=int, default=0, help="this TF worker's index")
    args = parser.parse_args(argv)
    os.environ.update(MULTICAST_OFF)
    job = TrainJob(**args.job)
    report = Reporter(args.report_fd, args.tf_task if job.framework == "tensorflow" else args.rank)
    try:
        if job.framework == "tensorflow":
            from dltui.bench.training.tf_train import train

            train(job, report, stdin_closed, args.tf_workers, args.tf_task)
        else:
            from dltui.bench.training.torch_train import train

            train(job, report, stdin_closed, args.rank, args.world, args.master, args.local_rank)
    except Exception as error:  # any framework error: report it, and fail this rank
        traceback.print_exc()
        report.error(error_text(error))
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
