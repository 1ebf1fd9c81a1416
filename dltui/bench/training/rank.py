"""One training rank process: `python -m dltui.bench.training.rank --job JSON …`.

Reports in frames on stdout (bench/ranks.Reporter) and stops between steps once its stdin
closes, which also happens when its parent dies.
"""

from __future__ import annotations

import os

from dltui.bench.ranks import Reporter, exit_rank, rank_parser, run_rank, stdin_closed
from dltui.bench.training import TrainJob
from dltui.plans.names import MULTICAST_OFF


def main(argv: list[str] | None = None) -> int:
    args = rank_parser("python -m dltui.bench.training.rank").parse_args(argv)
    os.environ.update(MULTICAST_OFF)
    job = TrainJob(**args.job)
    report = Reporter.on_stdout(args.tf_task if job.framework == "tensorflow" else args.rank)

    def work() -> None:
        if job.framework == "tensorflow":
            from dltui.bench.training import tf_train

            tf_train.train(job, report, stdin_closed, args.tf_workers, args.tf_task)
        else:
            from dltui.bench.training import torch_train

            local = args.rank if args.local_rank is None else args.local_rank
            torch_train.train(job, report, stdin_closed, args.rank, args.world, args.master, local)

    return run_rank(report, work)


if __name__ == "__main__":
    exit_rank(main())
