"""The server's latest benchmark job: its progress and its results as they arrive."""

from __future__ import annotations

from textual.content import Content

from dltui.fleet.state import JobView
from dltui.formatting import rate_text, ratio_text
from dltui.tui.widgets.panel import FleetPanel

SHOWN_RESULTS = 12  # the newest; the whole list is in recordings and `dltui bench --json`
STATE_STYLES = {
    "running": "$text-accent",
    "done": "$text-success",
    "cancelled": "$text-warning",
    "failed": "$text-error",
    "refused": "$text-error",
}


def progress_line(job: JobView, width: int) -> Content:
    bar_width = max(width - 12, 4)
    done = job.done + (job.fraction or 0.0)  # a long case (a training run) says how far it is
    filled = min(round(bar_width * done / job.total), bar_width) if job.total else 0
    return Content.assemble(
        ("█" * filled, "$text-accent"),
        ("·" * (bar_width - filled), "$text-muted"),
        f" {job.done}/{job.total}",
    )


def result_line(job: JobView, index: int, width: int) -> Content:
    result = job.results[index]
    what = f"{result.kind} {result.shape} {result.direction} {result.precision}"
    if result.error is not None:
        return Content.assemble((what[: width // 2], "$text-muted"), " ", (result.error, "$error"))
    figure = rate_text(result)
    ratio = ratio_text(result)
    figure = f"{figure} {ratio}" if ratio else figure
    room = max(width - len(figure) - 1, 0)
    return Content.assemble((what[:room].ljust(room), "$text-muted"), " ", (figure, "bold"))


class JobPanel(FleetPanel):
    """Hidden until the server has run a job."""

    DEFAULT_CSS = """
    JobPanel {
        border: round $accent-muted;
        border-title-color: $text;
        padding: 0 1;
        display: none;
        &.-shown {
            display: block;
        }
    }
    """

    def title(self) -> str | None:
        job = self.server.latest_job
        return None if job is None else f"job {job.id} · {job.state}"

    def lines(self, width: int) -> list[Content]:
        job = self.server.latest_job
        if job is None:
            return []
        lines = []
        if job.state == "running":
            lines += [progress_line(job, width), Content(job.label[:width])]
        elif job.error:
            lines.append(Content.styled(job.error, STATE_STYLES[job.state]))
        first = max(len(job.results) - SHOWN_RESULTS, 0)
        lines += [result_line(job, i, width) for i in range(first, len(job.results))]
        return lines
