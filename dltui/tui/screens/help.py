"""The `?` screen: the keys, and what each line of a column measures and where it comes from."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

HELP = """\
[b]Keys[/b]
  [b]b[/b]         run a benchmark: choose servers, a plan, framework, precision;
            [b]s[/b] starts, a bar per server shows how far it is, [b]x[/b] cancels
  [b]v[/b]         results side by side: a column per server, a row per benchmark;
            [b]b[/b] baseline, [b]m[/b] metric (throughput, per watt, scaling efficiency),
            [b]s[/b] sort by the cursor's column, [b]e[/b] export CSV/JSON, [b]p[/b] phases
  [b]d[/b]         the server under the focus in detail (or click its header): every GPU,
            its processes, throttle reasons in words, telemetry per benchmark case;
            processes by owner (job, container, user), health events, MIG instances
  [b]e[/b]         every server's health events and alerts, newest first
  [b]/[/b]         filter servers by name      [b]t[/b] light or dark theme
  [b]q[/b]         quit (stops the connections; a local agent exits)
  [b]?[/b]         this help; [b]escape[/b] or [b]?[/b] closes it
  [b]ctrl+p[/b]    command palette (every theme, keys, screenshot)
  ← →       one server left, right; home, end: first, last
  tab ↑ ↓   focus a column, scroll its GPUs
  [b]r[/b]         record every frame to dltui-DATE-TIME.dlrec here; [b]r[/b] again stops
  replays:  [b]space[/b] play/pause, [b]+ -[/b] speed, [b]\\[ ][/b] ∓10 s, [b]0-9[/b] jump,
            [b]g[/b] a time you type (1:23:45, 90s, 50%), [b]n[/b] the next benchmark case

[b]Comparing two servers[/b]
  dltui gpu-01:7070 gpu-02:7070, then [b]b[/b], keep both chosen, pick a plan, [b]s[/b];
  when it is done, [b]v[/b]: each server a column, each ratio against the baseline

[b]Header[/b]
  hostname, GPU model × count, link state (live, connecting, offline since…, auth failed),
  [b]rtt[/b] round trip of a ping, [b]offset[/b] agent clock minus this clock,
  [b]dropped[/b] samples the agent dropped because this client read too slowly

[b]Host[/b]
  [b]cpu[/b] all cores, one block per core under it; [b]mem[/b] used/total;
  [b]load[/b] 1, 5, 15 min; [b]net[/b] ↓ receive ↑ transmit; [b]disk[/b] read, write

[b]GPU[/b] (NVML; a line the GPU does not support is not shown)
  [b]util[/b]    time a kernel was running (not how much of the GPU it used)
  [b]mem[/b]     memory used/total          [b]power[/b]   draw/limit
  [b]temp[/b]    GPU temperature            [b]sm clk[/b]  SM clock
  [b]pci[/b]     PCIe transmit/receive      [b]nvl[/b]     NVLink transmit/receive
  [b]tensor[/b]  tensor cores active (GPM, Hopper and later)
  [b]throttle[/b] why the clocks are held down, in words
  dimmed lines: fields whose read failed this tick, with NVML's reason

Sparklines: newest at the right, one cell a half second (its peak); a gap is the link down;
a shaded band is a benchmark case running (brighter where it starts).
Percentages are scaled 0–100, the rest 0 to the field's limit or the largest value shown.\
"""


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Close"),
        Binding("question_mark", "dismiss", "Close", show=False),
    ]

    DEFAULT_CSS = """
    HelpScreen {
        & > .dialog {
            width: auto;
            max-width: 100%;
        }
        & Static {
            width: auto;
        }
    }
    """
    DEFAULT_CLASSES = "dialog-screen"

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="dialog") as body:
            body.border_title = "dltui help"
            yield Static(HELP)
