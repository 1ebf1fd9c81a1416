"""What the agent remembers of its benchmark jobs for /metrics: the latest result of each case,
the running job's progress and how jobs ended.

Fed from the job frames the agent relays (its event loop), read by scrapes (the metrics
server's threads), so the few fields are swapped under a lock and the points are copied out.
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict
from collections.abc import Iterator

from dltui.protocol.messages import JobEnd, JobProgress, JobResult, Message
from dltui.protocol.metric_names import (
    JOBS_ENDED,
    MetricSpec,
    Point,
    kernel_points,
    model_points,
    progress_points,
)

MAX_CASES = 4096
"""Cases remembered (the whole DeepBench set in three precisions is under 1,000); past it, the
case reported longest ago is forgotten."""


class ResultBoard:
    def __init__(self, hostname: str) -> None:
        self.hostname = hostname
        self._lock = threading.Lock()
        self._latest: OrderedDict[tuple[MetricSpec, tuple[str, ...]], float] = OrderedDict()
        self._progress: JobProgress | None = None
        self._ended: Counter[str] = Counter()

    def observe(self, message: Message) -> None:
        """A job frame the agent relays to its clients."""
        if isinstance(message, JobResult):
            points = list(self._result_points(message))
            with self._lock:
                for spec, labels, value in points:
                    self._latest[spec, labels] = value
                    self._latest.move_to_end((spec, labels))
                while len(self._latest) > MAX_CASES:
                    self._latest.popitem(last=False)
        elif isinstance(message, JobProgress):
            self._progress = message
        elif isinstance(message, JobEnd):
            with self._lock:
                self._ended[message.state] += 1
                if self._progress is not None and self._progress.job == message.job:
                    self._progress = None

    def _result_points(self, message: JobResult) -> Iterator[Point]:
        if message.result is not None:
            yield from kernel_points(self.hostname, message.result)
        if message.model is not None:
            yield from model_points(self.hostname, message.model)

    def points(self, running: str | None) -> list[Point]:
        """Every result, and the progress of `running` (the job id), if a job runs."""
        with self._lock:
            latest = [(spec, labels, value) for (spec, labels), value in self._latest.items()]
            ended = [(JOBS_ENDED, (self.hostname, state), float(count))
                     for state, count in sorted(self._ended.items())]  # fmt: skip
        progress = self._progress
        if running is None:
            jobs = list(progress_points(self.hostname, None))
        elif progress is not None and progress.job == running:
            jobs = list(progress_points(self.hostname, progress))
        else:  # started, no case finished yet
            jobs = list(progress_points(self.hostname, JobProgress(running, 0, 0)))
        return latest + jobs + ended
