"""A server's benchmark job in three lines at the top of its column, three in every column
once one has run a job (blank without one), so the rows below stay in line with the other
columns: its state and progress with an estimate of what is left, the case it runs (or why
it failed), its latest result. Before any job, one line says so."""

from __future__ import annotations

from textual.content import Content

from dltui.formatting import counted
from dltui.tui.layout import JOB_ROWS
from dltui.tui.view import RUNNING_AT_END
from dltui.tui.widgets.job_panel import STATE_STYLES, left_text, progress_bar, result_line
from dltui.tui.widgets.panel import FleetPanel


class JobLine(FleetPanel):
    DEFAULT_CSS = f"""
    JobLine {{
        height: {JOB_ROWS};
        padding: 0 1;
    }}
    """

    def lines(self, width: int) -> list[Content]:
        job = self.server.latest_job
        if job is None:
            return [Content.styled("no benchmark run", "$text-disabled")]
        latest = result_line(job, width) or Content("")
        timebase = self.view.timebase
        state = job.state
        if state == "running" and timebase.ended(self.server.source):
            words = Content.styled(f"job {job.id} · {RUNNING_AT_END}", "$text-warning")
            return [words, Content.styled(job.label, "$text-muted"), latest]
        name = job.id if width >= 50 else job.id[:6]  # enough to tell jobs apart in a column
        head = Content.assemble(
            ("job ", "$text-muted"),
            (name, "bold"),
            " · ",
            (state, f"bold {STATE_STYLES.get(state, '')}"),
        )
        if state == "running":
            heard = timebase.replay or self.server.link == "live"  # else no pace to go by
            left = left_text(job.remaining(timebase.now(self.server.source))) if heard else ""
            room = width - len(head.plain) - len(left) - 1
            if room >= 12:
                first = head + " " + progress_bar(job, room) + left
            else:  # no room for a bar: the count, at least
                first = head + f" {job.done}/{job.total}" + left
            return [first, Content.styled(job.label, "$text-muted"), latest]
        count = len(job.results) + len(job.model_results)
        head += Content.styled(f" · {counted(count, 'result')}", "$text-muted")
        why = Content.styled(job.error or "", STATE_STYLES.get(state, ""))
        return [head, why, latest]
