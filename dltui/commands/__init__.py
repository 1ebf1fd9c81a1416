"""The sub-commands' command lines and what they print: one module per command, each with
`parser()` and `run(parser, argv)`, thin users of the client session, the recording package
and the TUI. `dltui.cli` runs them and says their errors; `COMMANDS` is the one list of them,
which both `dltui.cli` and `dltui --help` read."""

from __future__ import annotations

from typing import NamedTuple


class Listed(NamedTuple):
    """A sub-command: the module that runs it, and its line in `dltui --help`."""

    module: str
    usage: str
    summary: str


COMMANDS = {
    "agent": Listed(
        "dltui.commands.agent", "--listen HOST:PORT | --stdio", "run an agent on a server"
    ),
    "probe": Listed(
        "dltui.commands.probe", "AGENT [--json]", "print an agent's inventory and a sample"
    ),
    "bench": Listed(
        "dltui.commands.bench",
        "kernels|models [--agent AGENT] …",
        "DeepBench kernels; CNNs or GPTs trained",
    ),
    "record": Listed(
        "dltui.commands.record", "-o FILE [AGENT ...]", "record agents' frames to a file"
    ),
    "replay": Listed("dltui.commands.replay", "FILE [FILE ...]", "replay recordings side by side"),
    "export": Listed(
        "dltui.commands.export", "FILE --format csv|json -o OUT", "tidy tables of a recording"
    ),
    "report": Listed(
        "dltui.commands.report", "FILE [FILE ...] -o DIR", "Markdown/HTML report with plots"
    ),
    "predict": Listed(
        "dltui.commands.predict",
        "[FILE ...] [--server TOML] …",
        "training on servers × GPUs nobody measured",
    ),
    "serve": Listed("dltui.commands.serve", "[--port N] [ARGS ...]", "the TUI on a local web page"),
}


def listing() -> str:
    """The commands as `dltui --help` lists them, their summaries in one column."""
    lines = [f"dltui {name} {entry.usage}" for name, entry in COMMANDS.items()]
    width = max(map(len, lines))
    summaries = (entry.summary for entry in COMMANDS.values())
    return "\n".join(
        f"  {line:<{width}}  {summary}" for line, summary in zip(lines, summaries, strict=True)
    )
