"""The `?` screen: the keys, and what each line of a column measures and where it comes from.

Each entry is a term and its words; the words wrap under themselves at any width (80×24
included), never cutting a word.
"""

from __future__ import annotations

from typing import ClassVar

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from dltui.tui.charts import gpu_charts, host_charts

Section = tuple[str, tuple[tuple[str, str], ...]]

HELP: tuple[Section, ...] = (
    ("Keys", (
        ("b", "run a benchmark: choose servers, a plan, framework, precision; s starts, a bar "
              "per server shows how far it is, x cancels"),
        ("v", "results side by side: a column per server, a row per benchmark; b baseline, m "
              "metric (throughput, per watt, scaling efficiency), s sort by the cursor's column "
              "(within each unit), e export CSV/JSON, p phases, w what-if"),
        ("w", "in the results: what-if, predicted images/s and scaling efficiency of layouts "
              "of servers × GPUs from a one-GPU step profile and all-reduce link curves, the "
              "measured figure beside each where there is one; + - the network between "
              "servers, n the measured one, m the model"),
        ("d, enter", "the focused server in detail (or click its header): every GPU, its "
                     "processes, throttle reasons in words, telemetry per benchmark case; its "
                     "processes by owner (job, container, user), health events, MIG instances"),
        ("e", "every server's health events and alerts, newest first"),
        ("T", "how the focused server is wired: GPU↔GPU links (NVLink, PCIe switch, host "
              "bridge, across sockets), NUMA and NIC placement, and what its copies measured "
              "over each link (T in the results: every server's)"),
        ("o", "overlay: one chart per metric, a line per server, and each server's difference "
              "from a baseline (b picks it)"),
        ("w", "the charts' window: 1 min, 10 min, 1 h"),
        ("c", "compact (a line per GPU) or panels (charts per GPU); small screens start compact"),
        (":", "a command: bench quick, record, filter gpu-0, window 10m, overlay, help …"),
        ("/", "filter servers by name; escape clears the filter"),
        ("t", "light or dark theme"),
        ("r", "record every frame to dltui-DATE-TIME.dlrec here; r again stops"),
        ("q", "quit (stops the connections; a local agent exits); ctrl+c too (exit status 130)"),
        ("?", "this help: ↑ ↓ j k scroll, g G top and end, escape or ? closes it"),
        ("ctrl+p", "command palette: every action above, every theme, screenshot"),
        ("← →", "one server left, right; home, end: first, last"),
        ("tab", "focus the next server (its header lights up); ↑ ↓ scroll it"),
        ("replays", "space play/pause, + - speed, [ ] ∓10 s, 0-9 jump, g a time you type "
                    "(1:23:45, 90s, 50%), n the next benchmark case"),
    )),
    ("Comparing two servers", (
        ("", "dltui gpu-01:7070 gpu-02:7070, then b, keep both chosen, pick a plan, s; when it "
             "is done, v: each server a column, each ratio against the baseline"),
    )),
    ("Header", (
        ("", "hostname, GPU model × count, link state (live, connecting, offline since…, auth "
             "failed; a replay says so), rtt round trip of a ping, offset agent clock minus this "
             "clock, dropped samples the agent dropped because this client read too slowly; "
             "busy: someone else's work on its GPUs, or ⚠ its worst health condition"),
        ("as of", "an offline server keeps its last values, greyed, measured at that time"),
    )),
    ("Charts", (
        ("", "newest at the right, each point the peak of its stretch of time; a gap is the "
             "link down; a shaded band is a benchmark case (brighter where it starts). The "
             "y-axis is the field's physical range where it has one, else a round number "
             "above what it reached. Σ: summed over the server's GPUs."),
    )),
)  # fmt: skip


TERM_WIDTH = 8


def field_sections() -> tuple[Section, ...]:
    """What each chart measures, from its field's spec (protocol/fields.py)."""
    host = tuple((c.label, c.field.help) for c in host_charts())
    gpu = tuple((c.label, c.field.help) for c in gpu_charts())
    throttle = ("throttle", "why the clocks are held down, in words (a panel's title)")
    return (("Host", host), ("GPU (NVML; a field no GPU reports is left out)", (*gpu, throttle)))


def help_text() -> Group:
    """Every section: a heading, then each term with its words wrapped beside it."""
    parts: list[Text | Table] = []
    sections = (*HELP[:-1], *field_sections(), HELP[-1])
    for index, (heading, entries) in enumerate(sections):
        parts.append(Text(("\n" if index else "") + heading, style="bold underline"))
        table = Table.grid(padding=(0, 2))
        table.add_column(no_wrap=True, style="bold", width=TERM_WIDTH)
        table.add_column(ratio=1)
        for term, words in entries:
            table.add_row(term, words)
        parts.append(table)
    return Group(*parts)


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Close"),
        Binding("question_mark", "dismiss", "Close", show=False),
        Binding("j,down", "scroll(1)", "Down", show=False),
        Binding("k,up", "scroll(-1)", "Up", show=False),
        Binding("pagedown,space", "scroll(10)", "Page down", show=False),
        Binding("pageup", "scroll(-10)", "Page up", show=False),
        Binding("g,home", "scroll_to_end(0)", "Top", show=False),
        Binding("G,end", "scroll_to_end(1)", "End", show=False),
    ]

    DEFAULT_CSS = """
    HelpScreen {
        & > .dialog {
            width: 100%;
            max-width: 110;
        }
    }
    """
    DEFAULT_CLASSES = "dialog-screen"

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="dialog") as body:
            body.border_title = "dltui help"
            body.border_subtitle = "↑↓ j k scroll · g G top, end · esc or ? close"
            yield Static(help_text())

    def action_scroll(self, rows: int) -> None:
        self.query_one(VerticalScroll).scroll_relative(y=rows, animate=False)

    def action_scroll_to_end(self, end: int) -> None:
        body = self.query_one(VerticalScroll)
        body.scroll_to(y=body.max_scroll_y if end else 0, animate=False)
