"""One all-reduce rank as a child process: `python -m dltui.bench.kernels.allreduce_process`.

Apart from allreduce.py, which starts the ranks, so that neither framework's rank code (torch's
in allreduce.py, TensorFlow's in allreduce_tf.py) imports the module that imports it.
"""

from __future__ import annotations

from dltui.bench.kernels.allreduce import AllReduceJob, allreduce_rank
from dltui.bench.ranks import Reporter, exit_rank, rank_parser, run_rank, stdin_closed


def main(argv: list[str] | None = None) -> int:
    args = rank_parser("python -m dltui.bench.kernels.allreduce_process").parse_args(argv)
    job = AllReduceJob(**args.job)
    report = Reporter.on_stdout(args.rank)

    def work() -> None:
        if job.framework == "tensorflow":
            from dltui.bench.kernels.allreduce_tf import tensorflow_allreduce

            tensorflow_allreduce(job, report.result, stdin_closed, args.tf_workers, args.tf_task)
        else:
            allreduce_rank(args.rank, args.world, args.master, job, report.result, stdin_closed,
                           args.local_rank)  # fmt: skip

    return run_rank(report, work)


if __name__ == "__main__":
    exit_rank(main())
