"""A server's latest benchmark job: its progress and its results as they arrive (the detail
screen lists them; a column shows its state in two lines, `job_line.py`)."""

from __future__ import annotations

from textual.content import Content

from dltui.fleet.state import JobView
from dltui.formatting import time_left
from dltui.result_text import model_figure, model_what, rate_text, ratio_text
from dltui.tui.widgets.panel import FleetPanel

SHOWN_RESULTS = 12  # the newest; the whole list is in recordings and `dltui bench --json`
STATE_STYLES = {
    "running": "$text-accent",
    "done": "$text-success",
    "cancelled": "$text-warning",
    "failed": "$text-error",
    "refused": "$text-error",
}


def left_text(seconds: float | None) -> str:
    """' · ~3 min left', or nothing until the pace is known."""
    return "" if seconds is None else f" · {time_left(seconds)}"


def progress_bar(job: JobView, width: int) -> Content:
    """'███····· 9/60': cases done, a training run's current one by its own steps."""
    count = f" {job.done}/{job.total}"
    bar_width = max(width - len(count), 4)
    filled = min(round(bar_width * job.progress()), bar_width)
    return Content.assemble(
        ("█" * filled, "$text-accent"), ("·" * (bar_width - filled), "$text-muted"), count
    )


def result_line(job: JobView, width: int, index: int = -1) -> Content | None:
    """One result in a line: what ran, then its figure (and ratio to the published one)."""
    if job.results and (index >= 0 or not job.model_results):
        result = job.results[index]
        what = f"{result.kind} {result.shape} {result.direction} {result.precision}"
        if result.error is not None:
            return Content.assemble(
                (what[: width // 2], "$text-muted"), " ", (result.error, "$error")
            )
        figure = rate_text(result)
        ratio = ratio_text(result)
        figure = f"{figure} {ratio}" if ratio else figure
    elif job.model_results:
        model = job.model_results[index]
        what = model_what(model)
        if model.error is not None:
            return Content.assemble(
                (what[: width // 2], "$text-muted"), " ", (model.error, "$error")
            )
        figure = model_figure(model)
    else:
        return None
    room = max(width - len(figure) - 1, 0)
    return Content.assemble((what[:room].ljust(room), "$text-muted"), " ", (figure, "bold"))


class JobPanel(FleetPanel):
    """The latest job and its newest results; hidden until the server has run a job."""

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
            lines += [progress_bar(job, width), Content(job.label[:width])]
        elif job.error:
            lines.append(Content.styled(job.error, STATE_STYLES[job.state]))
        first = max(len(job.results) - SHOWN_RESULTS, 0)
        found = (result_line(job, width, i) for i in range(first, len(job.results)))
        lines += [line for line in found if line is not None]
        return lines
