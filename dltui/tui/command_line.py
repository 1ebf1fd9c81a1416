"""The `:` command line, as k9s has it: `:bench quick`, `:record`, `:filter gpu-0`, `:window 10m`.

Each command is an action of the app (or of the screen showing), so a command does exactly
what its key does; the table here gives the words, what each takes and a line of help, and
the input suggests the rest of a word as it is typed.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from textual.suggester import SuggestFromList
from textual.widgets import Input


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    action: str
    """The action it runs; one taking an argument gets the rest of the line as a string."""
    argument: str = ""
    """What it takes, for the help line ('' for nothing)."""
    help: str = ""


COMMANDS = (
    Command(
        "bench",
        "bench",
        "[smoke|quick|full|models|scale-up|scale-out|FILE.toml]",
        "run a plan on every live server (alone: open the launcher)",
    ),
    Command("cancel", "cancel_run", "", "cancel the benchmark run"),
    Command("results", "results", "", "results side by side"),
    Command("phases", "phases", "", "every benchmark case with its telemetry"),
    Command("whatif", "whatif", "", "predicted images/s of layouts of servers × GPUs"),
    Command("export", "export", "", "write the results to a CSV or JSON file"),
    Command("detail", "detail", "", "the focused server in detail"),
    Command("overlay", "overlay", "", "one chart per metric, a line per server"),
    Command("window", "window", "[1m|10m|1h]", "the charts' time window"),
    Command("compact", "mode", "", "one line per GPU"),
    Command("panels", "mode", "", "a panel of charts per GPU"),
    Command("filter", "set_filter", "TEXT", "show only servers whose name holds TEXT"),
    Command("record", "record", "", "start or stop recording every frame"),
    Command("theme", "set_theme", "[dark|light|NAME]", "the colours"),
    Command("play", "play_pause", "", "replay: play or pause"),
    Command("pause", "play_pause", "", "replay: play or pause"),
    Command("speed", "set_speed", "[0.25…32]", "replay: playing speed"),
    Command("jump", "jump_to_text", "TIME", "replay: go to 1:23:45, 90s or 50%"),
    Command("next", "next_phase", "", "replay: the next benchmark case"),
    Command("help", "help", "", "every key and field explained"),
    Command("quit", "quit", "", "leave dltui"),
)
BY_NAME = {command.name: command for command in COMMANDS}
PLAN_WORDS = {
    "smoke": "smoke",
    "quick": "quick",
    "full": "full",
    "models": "models",
    "scale-up": "scale_up",
    "scale-out": "scale_out",
}


class CommandError(ValueError):
    """A line that names no command, in words that suggest one."""


def parse(line: str) -> tuple[Command, str]:
    """The command a line names and the rest of it; CommandError says what is wrong."""
    word, _, rest = line.strip().lstrip(":").strip().partition(" ")
    if not word:
        raise CommandError("type a command: " + ", ".join(BY_NAME))
    command = BY_NAME.get(word.lower())
    if command is None:
        close = difflib.get_close_matches(word.lower(), BY_NAME, n=1)
        hint = f" — did you mean {close[0]}?" if close else f" (commands: {', '.join(BY_NAME)})"
        raise CommandError(f"unknown command '{word}'{hint}")
    if command.name in ("compact", "panels"):
        rest = command.name
    return command, rest.strip()


def suggestions() -> list[str]:
    """Whole lines worth completing to, for the input's suggester."""
    found = [command.name for command in COMMANDS]
    found += [f"bench {word}" for word in PLAN_WORDS]
    found += [f"window {word}" for word in ("1m", "10m", "1h")]
    found += [f"theme {word}" for word in ("dark", "light")]
    return found


class CommandLine(Input):
    """The line above the footer that `:` opens; enter runs it, escape closes it."""

    DEFAULT_CSS = """
    CommandLine {
        dock: bottom;
        margin-bottom: 1;
    }
    """

    def __init__(self) -> None:
        super().__init__(
            placeholder=":bench quick · :record · :filter gpu-0 · :window 10m · :help",
            suggester=SuggestFromList(suggestions(), case_sensitive=False),
            id="command",
            compact=True,
        )
        self.cursor_blink = False  # a steady cursor: the line is open only while typing
