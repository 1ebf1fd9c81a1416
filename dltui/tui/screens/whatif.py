"""The what-if screen (`w` in the results): one bigger server or more servers? For a model the
results profile on one GPU, the predicted images/s and scaling efficiency of layouts of
servers × GPUs nobody measured, the measured figure beside each prediction where there is one,
and what every prediction came from.

`+` and `-` step the network between servers through common line rates (a described link in
place of the measured one), `n` returns to the measured network, `m` picks the next profiled
model. Results come from the fleet, so the screen works live and in a replay alike, and it
follows new results as they arrive.
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Header, Static

from dltui.fleet.compare import results_by_server
from dltui.fleet.state import Fleet
from dltui.predict.answer import NothingToPredict
from dltui.recording.whatif import WhatIfView, profiled_models, step_network, what_if_view
from dltui.tui.screens.results import IN_A_REPLAY
from dltui.tui.widgets.fitted_footer import FittedFooter
from dltui.tui.widgets.whatif_table import WhatIfTable

REFRESH_S = 1.0
NO_PROFILE = (
    "Nothing to predict from yet: no one-GPU training result with a step profile. Run "
    "`dltui bench models --model resnet50 --gpus 1` on a server (or b here: a training plan "
    "on one GPU), and all-reduce results (`dltui bench kernels --kind allreduce`) for the "
    "links inside a server and between servers; then the what-if rows appear here."
)
NO_PROFILE_YET = (
    "Nothing to predict from at this point of the replay: no one-GPU training result with a "
    f"step profile. {IN_A_REPLAY} It takes a recording of `dltui bench models --gpus 1` (the "
    "profile) and of `dltui bench kernels --kind allreduce` (the links' curves)."
)


def sources_text(view: WhatIfView) -> Content:
    """What every figure came from, and why a layout has none."""
    parts: list[str | tuple[str, str]] = [("Predicted from", "bold"), "\n"]
    parts += [f"  {line}\n" for line in view.table.sources]
    missing = dict.fromkeys(row.prediction.missing for row in view.table.rows)
    parts += [(f"  {reason}\n", "$text-warning") for reason in missing if reason]
    if any(row.measured_images_per_s for row in view.table.rows):
        parts.append("  measured: a recorded run of that layout; ±%: the prediction against it\n")
    return Content.assemble(*parts)


class WhatIfScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,w", "app.pop_screen", "Back"),
        Binding("plus,equals_sign", "network(1)", "Faster net", key_display="+"),
        Binding("minus", "network(-1)", "Slower net", key_display="-"),
        Binding("n", "measured_network", "Measured net"),
        Binding("m", "next_model", "Model"),
    ]

    DEFAULT_CSS = """
    WhatIfScreen {
        & #settings {
            height: auto;
            padding: 0 1;
            background: $boost;
        }
        & #sources {
            height: auto;
            padding: 1 1 0 1;
            color: $text-muted;
        }
        & #empty {
            padding: 1 2;
            color: $text-muted;
        }
    }
    """

    model: reactive[str | None] = reactive(None, init=False)
    """The profiled model shown; None: the first by name."""
    network: reactive[float | None] = reactive(None, init=False)
    """The described network's line rate between servers, Gbit/s; None: as measured."""

    def __init__(self, fleet: Fleet, replay: bool) -> None:
        super().__init__()
        self.fleet = fleet
        self.replay = replay
        self.view: WhatIfView | None = None
        self.models: list[str] = []
        self._drawn: tuple[object, ...] | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="settings")
        yield Static(NO_PROFILE_YET if self.replay else NO_PROFILE, id="empty")
        yield WhatIfTable(id="rows")
        yield Static(id="sources")
        yield FittedFooter()

    def on_mount(self) -> None:
        self.sub_title = "what-if: predicted"
        self.refresh_view()
        self.query_one(WhatIfTable).focus()
        self.set_interval(REFRESH_S, self.refresh_view)

    def watch_model(self) -> None:
        self.refresh_view()

    def watch_network(self) -> None:
        self.refresh_view()

    def refresh_view(self) -> None:
        """Predict again when the results or the choices changed."""
        kernels, models = results_by_server(self.fleet)
        drawn = (len(kernels), len(models), self.model, self.network)
        if drawn == self._drawn:
            return
        self._drawn = drawn
        self.models = profiled_models(kernels, models)
        model = self.model if self.model in self.models else next(iter(self.models), None)
        view = None
        if model is not None:
            try:
                view = what_if_view(kernels, models, model, self.network)
            except NothingToPredict:  # the profile is there but does not make a workload
                view = None
        self.view = view
        self._draw(view)
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Keys with nothing to change are shown dimmed: no model to switch to, no table."""
        if action == "next_model":
            return len(self.models) > 1 or None
        if action in ("network", "measured_network"):
            return self.view is not None or None
        return True

    def _draw(self, view: WhatIfView | None) -> None:
        self.query_one("#empty").display = view is None
        for part in ("#rows", "#sources"):
            self.query_one(part).display = view is not None
        if view is None:
            self.query_one("#settings", Static).update("")
            return
        self.query_one(WhatIfTable).show(view)
        self.query_one("#sources", Static).update(sources_text(view))
        workload = view.table.workload
        choice = f" ({self.models.index(workload.model) + 1} of {len(self.models)}: m)"
        self.query_one("#settings", Static).update(
            Content.assemble(
                ("PREDICTED", "bold reverse $warning"),
                " ",
                (workload.model, "bold"),
                f", batch {workload.batch} a GPU" + (choice if len(self.models) > 1 else ""),
                " · between servers: ",
                (view.network_summary, "bold"),
                " (+ −, n)",
            )
        )

    def action_network(self, direction: int) -> None:
        if self.view is not None:
            self.network = step_network(self.view, direction)

    def action_measured_network(self) -> None:
        self.network = None

    def action_next_model(self) -> None:
        if self.models:
            shown = self.view.table.workload.model if self.view else None
            index = self.models.index(shown) + 1 if shown in self.models else 0
            self.model = self.models[index % len(self.models)]
