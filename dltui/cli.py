"""The one entry point: `dltui [AGENT ...]` opens the TUI; sub-commands do the rest.

Heavy parts (Textual, the agent's sampler) are imported inside the command that needs them,
so `dltui agent` never loads Textual and `dltui` never loads a deep-learning framework.
"""

from __future__ import annotations

import argparse
import logging
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

from dltui.agent.config import MAX_NVML_TIMEOUT_S, data_dirs, in_range
from dltui.client.options import (
    add_connection_options,
    listen_argument,
    reach,
    secret_option,
    target_argument,
)
from dltui.client.target import Target
from dltui.protocol.messages import MAX_RATE_HZ


def _number_argument(high: float, unit: str) -> Callable[[str], float]:
    """argparse's type for a number in (0, high]."""

    def number(text: str) -> float:
        try:
            return in_range(float(text), high, unit)
        except ValueError:
            message = f"expected {unit} in (0, {high:g}], got {text!r}"
            raise argparse.ArgumentTypeError(message) from None

    return number


def _data_dir(text: str) -> str:
    try:
        (folder,) = data_dirs([text])
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return folder


_rate = _number_argument(MAX_RATE_HZ, "a number of Hz")
_nvml_timeout = _number_argument(MAX_NVML_TIMEOUT_S, "seconds")


def _tui_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dltui",
        description="Compare deep-learning servers live: telemetry and benchmarks side by side.",
        epilog=(
            "commands:\n"
            "  dltui agent --listen HOST:PORT | --stdio   run an agent on a server\n"
            "  dltui probe AGENT [--json]                 print an agent's inventory and a sample\n"
            "  dltui bench kernels [--agent AGENT] …      run DeepBench kernels, print a table\n"
            "  dltui bench models [--agent AGENT] …       train CNNs, print images/s\n"
            "  dltui record -o FILE [AGENT ...]           record agents' frames to a file\n"
            "  dltui replay FILE [FILE ...]               replay recordings side by side\n"
            "  dltui export FILE --format csv|json -o OUT tidy tables of a recording\n"
            "  dltui report FILE [FILE ...] -o DIR        Markdown/HTML report with plots\n"
            "  dltui serve [--port N] [ARGS ...]          the TUI on a local web page\n"
            "\nWith no AGENT, dltui starts an agent for this machine and shows it."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "agents",
        nargs="*",
        type=target_argument,
        metavar="AGENT",
        help="see 'reaching agents' below",
    )
    parser.add_argument("--rate", type=_rate, default=10.0, help="samples per second (default 10)")
    add_connection_options(parser)
    return parser


def _agent_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dltui agent",
        description="Sample this server's GPUs and host and serve the telemetry to clients.",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--listen",
        metavar="HOST:PORT",
        type=listen_argument,
        help="serve over TCP (port 0: any free port)",
    )
    where.add_argument("--stdio", action="store_true", help="serve one client on stdin/stdout")
    parser.add_argument("--rate", type=_rate, default=10.0, help="samples per second (default 10)")
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning"])
    parser.add_argument(
        "--nvml-timeout", type=_nvml_timeout, default=30.0, metavar="S",
        help="go on without GPUs if NVML has not started in S seconds (default 30)",
    )  # fmt: skip
    parser.add_argument(
        "--config", metavar="FILE", help="read these options from a TOML file (see agents/)"
    )
    parser.add_argument(
        "--data-dir", action="append", type=_data_dir, metavar="DIR", dest="data_dir",
        help="a folder time-to-accuracy plans may read, with those inside it (repeat for more; "
        "default: none; replaces the config's data_dirs)",
    )  # fmt: skip
    parser.set_defaults(data_dirs=())  # the config's data_dirs, if it has them
    security = parser.add_argument_group("security")
    security.add_argument(
        "--secret-file", metavar="FILE", help="a secret clients must prove they know (mode 0600)"
    )
    security.add_argument("--tls-cert", metavar="FILE", help="serve TLS with this certificate")
    security.add_argument("--tls-key", metavar="FILE", help="the certificate's key (PEM)")
    security.add_argument(
        "--tls-client-ca", metavar="FILE", help="require client certificates signed by this CA "
        "(mutual TLS; enough to listen beyond loopback without a secret)"
    )  # fmt: skip
    return parser


def _probe_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dltui probe", description="Print an agent's inventory and one sample, then exit."
    )
    parser.add_argument(
        "agent", type=target_argument, metavar="AGENT", help="see 'reaching agents'"
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    add_connection_options(parser)
    return parser


def _record_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dltui record",
        description="Record every frame from agents to a file, headless (for cron and CI).",
    )
    parser.add_argument(
        "agents", nargs="*", type=target_argument, metavar="AGENT", help="default: local"
    )
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="FILE")
    parser.add_argument("--duration", type=float, metavar="S", help="stop after S seconds")
    parser.add_argument(
        "--plan", type=Path, metavar="FILE", help="a TOML plan to run while recording; stop after"
    )
    parser.add_argument("--rate", type=_rate, default=10.0, help="samples per second (default 10)")
    add_connection_options(parser)
    return parser


def _run_agent(argv: list[str]) -> int:
    parser = _agent_parser()
    args = parser.parse_args(argv)
    if args.config is not None:  # the file's settings are defaults: the command line wins
        from dltui.agent.config import ConfigFileError, load_config

        try:
            parser.set_defaults(**load_config(args.config))
        except ConfigFileError as exc:
            parser.error(str(exc))
        args = parser.parse_args(argv)
    if not args.stdio and args.listen is None:
        parser.error("one of --listen HOST:PORT or --stdio is required (or listen in --config)")
    secret = secret_option(parser, args.secret_file)
    tls = _server_tls(parser, args)
    logging.basicConfig(
        level=args.log_level.upper(),
        stream=sys.stderr,
        format="%(asctime)s dltui-agent %(levelname)s %(message)s",
    )
    from dltui.agent.main import run

    listen = None if args.stdio else args.listen
    data_dirs = tuple(args.data_dir or args.data_dirs)
    return run(listen, args.rate, secret, tls, args.nvml_timeout, data_dirs)


def _server_tls(parser: argparse.ArgumentParser, args: argparse.Namespace):
    if bool(args.tls_cert) != bool(args.tls_key):
        parser.error("--tls-cert and --tls-key go together")
    if args.tls_cert is None:
        if args.tls_client_ca:
            parser.error("--tls-client-ca needs --tls-cert and --tls-key")
        return None
    if args.stdio:
        parser.error("TLS is for --listen; over --stdio the pipe (or ssh) is the channel")
    import ssl

    from dltui.agent.listener import server_context

    try:
        return server_context(args.tls_cert, args.tls_key, args.tls_client_ca)
    except (OSError, ssl.SSLError) as exc:
        parser.error(f"cannot use the TLS files: {exc}")


def _run_probe(argv: list[str]) -> int:
    parser = _probe_parser()
    args = parser.parse_args(argv)
    secret = secret_option(parser, args.secret_file)
    from dltui.client.probe import probe

    (target,) = reach(parser, args, [args.agent])
    return probe(target, secret, as_json=args.json)


def _run_bench(argv: list[str]) -> int:
    from dltui.client.bench_command import main as bench

    return bench(argv)


def _run_record(argv: list[str]) -> int:
    parser = _record_parser()
    args = parser.parse_args(argv)
    if args.duration is not None and not args.duration > 0:
        parser.error("--duration must be a positive number of seconds")
    secret = secret_option(parser, args.secret_file)
    from dltui.recording.record import run

    plans = []
    if args.plan is not None:
        from dltui.plans.check import PlanError
        from dltui.plans.files import load_plans

        try:
            plans = load_plans(args.plan)
        except PlanError as exc:
            parser.error(str(exc))
    targets = reach(parser, args, args.agents or [Target("local")])
    return run(targets, args.output, args.duration, secret, args.rate, plans)


def _run_replay(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="dltui replay",
        description="Replay recordings in the TUI, side by side, each server named by its file.",
    )
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE")
    args = parser.parse_args(argv)
    from dltui.recording.format import RecordingError
    from dltui.tui.replay_app import create_replay_app

    try:
        app = create_replay_app(args.files)
    except RecordingError as exc:
        parser.error(str(exc))
    app.run()
    return app.return_code or 0


def _run_export(argv: list[str]) -> int:
    from dltui.recording.export import FORMATS, ExportError, export
    from dltui.recording.format import RecordingError

    parser = argparse.ArgumentParser(
        prog="dltui export",
        description="Telemetry and benchmark results of recordings as tidy tables.",
    )
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE")
    parser.add_argument("--format", choices=FORMATS, default="csv")
    parser.add_argument(
        "-o", "--output", type=Path, required=True, help="a directory (csv, parquet) or a file"
    )
    args = parser.parse_args(argv)
    try:
        rows = export(args.files, args.format, args.output)
    except (RecordingError, ExportError) as exc:
        parser.error(str(exc))
    print(f"dltui export: {rows['telemetry']} telemetry rows, {rows['results']} kernel results, "
          f"{rows['models']} training runs ({rows['steps']} steps) → {args.output}")  # fmt: skip
    return 0


def _run_report(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="dltui report",
        description="A Markdown and HTML report with PNG plots from recordings.",
    )
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE")
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="DIR")
    args = parser.parse_args(argv)
    from dltui.recording.format import RecordingError

    try:
        from dltui.recording.report import write_report

        index = write_report(args.files, args.output)
    except ImportError as exc:
        parser.error(f"the report needs matplotlib (pip install 'dltui[report]'): {exc}")
    except RecordingError as exc:
        parser.error(str(exc))
    print(f"dltui report: {index} and {index.with_suffix('.html')}")
    return 0


def _run_tui(argv: list[str]) -> int:
    parser = _tui_parser()
    args = parser.parse_args(argv)
    secret = secret_option(parser, args.secret_file)
    from dltui.tui.app import create_app

    targets = reach(parser, args, args.agents or [Target("local")])  # each server once
    app = create_app(targets, secret=secret, rate_hz=args.rate)
    app.run()
    return app.return_code or 0


LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _run_serve(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="dltui serve",
        description="The TUI on a web page (textual-serve): each browser tab runs `dltui ARGS`. "
        "Local only: from elsewhere, forward the port over SSH (ssh -L 8000:127.0.0.1:8000 HOST).",
        epilog="examples: dltui serve · dltui serve gpu-01:7070 gpu-02:7070 · "
        "dltui serve replay monday.dlrec",
    )
    parser.add_argument("--host", default="127.0.0.1", help="loopback only (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="default 8000")
    parser.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS",
                        help="what each page runs: agents, or 'replay FILE ...'")  # fmt: skip
    args = parser.parse_args(argv)
    if args.host not in LOOPBACK:
        # The page can start benchmarks on every agent it shows: never offer it to a network.
        parser.error(f"--host {args.host}: the page serves only loopback; use SSH forwarding")
    if not 0 < args.port < 65536:
        parser.error(f"--port must be 1-65535, got {args.port}")
    try:
        from textual_serve.server import Server
    except ImportError as exc:
        parser.error(f"dltui serve needs textual-serve (pip install 'dltui[tui]'): {exc}")
    command = shlex.join([sys.executable, "-m", "dltui", *args.args])
    Server(command, host=args.host, port=args.port, title="dltui").serve()
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    commands: dict[str, Callable[[list[str]], int]] = {
        "agent": _run_agent,
        "probe": _run_probe,
        "bench": _run_bench,
        "record": _run_record,
        "replay": _run_replay,
        "export": _run_export,
        "report": _run_report,
        "serve": _run_serve,
    }
    if argv and argv[0] in commands:
        return commands[argv[0]](argv[1:])
    return _run_tui(argv)
