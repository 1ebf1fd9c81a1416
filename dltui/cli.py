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

from dltui.client.options import add_connection_options, reach
from dltui.client.target import Target, parse_host_port, parse_target
from dltui.protocol.auth import SecretFileError, load_secret


def _target(text: str) -> Target:
    try:
        return parse_target(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _listen(text: str) -> tuple[str, int]:
    try:
        return parse_host_port(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _rate(text: str) -> float:
    try:
        rate = float(text)
    except ValueError:
        rate = 0.0
    if not 0 < rate <= 100:
        raise argparse.ArgumentTypeError(f"rate must be a number of Hz in (0, 100], got {text!r}")
    return rate


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
        "agents", nargs="*", type=_target, metavar="AGENT", help="see 'reaching agents' below"
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
        "--listen", metavar="HOST:PORT", type=_listen, help="serve over TCP (port 0: any free port)"
    )
    where.add_argument("--stdio", action="store_true", help="serve one client on stdin/stdout")
    parser.add_argument("--rate", type=_rate, default=10.0, help="samples per second (default 10)")
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning"])
    parser.add_argument(
        "--config", metavar="FILE", help="read these options from a TOML file (see agents/)"
    )
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
    parser.add_argument("agent", type=_target, metavar="AGENT", help="see 'reaching agents'")
    parser.add_argument("--json", action="store_true", help="print JSON")
    add_connection_options(parser)
    return parser


def _names(allowed: tuple[str, ...]):
    def parse(text: str) -> list[str]:
        names = [name.strip() for name in text.split(",") if name.strip()]
        unknown = [name for name in names if name not in allowed]
        if unknown or not names:
            raise argparse.ArgumentTypeError(
                f"unknown {', '.join(unknown) or 'empty list'} (choose from {', '.join(allowed)})"
            )
        return names

    return parse


def _agents_options(parser: argparse.ArgumentParser, across_help: str) -> None:
    """Where a benchmark runs: the same options for every `dltui bench` command."""
    parser.add_argument(
        "--agent",
        type=_target,
        action="append",
        metavar="AGENT",
        help="an agent (default: local; see 'reaching agents'); repeat it to run on several "
        "servers side by side (or, " + across_help + ", as one run across them)",
    )
    parser.add_argument(
        "--rendezvous",
        type=_listen,
        metavar="HOST:PORT",
        help="where rank 0 waits in a run across servers (default: the first agent, port 29500)",
    )
    parser.add_argument("--timeout", type=float, default=3600.0, help="cap for the whole job")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the results as JSON")
    add_connection_options(parser)


def _bench_parser() -> argparse.ArgumentParser:
    from dltui.bench import plan

    parser = argparse.ArgumentParser(
        prog="dltui bench kernels",
        description="Run DeepBench kernels (GEMM, convolution, RNN, bandwidth, all-reduce) on an "
        "agent (this machine by default) and print a table as results arrive.",
    )
    _agents_options(parser, "with --kind allreduce")
    parser.add_argument("--framework", choices=plan.FRAMEWORKS, default="torch")
    parser.add_argument("--set", dest="shape_set", choices=plan.SHAPE_SETS, default="quick")
    parser.add_argument(
        "--kind", type=_names(plan.KINDS), default=["gemm", "conv", "rnn"], metavar="K,K"
    )
    parser.add_argument(
        "--precision", type=_names(plan.PRECISIONS), default=["fp32"], metavar="P,P"
    )
    parser.add_argument("--device", choices=plan.DEVICES, default="auto")
    parser.add_argument("--gpus", type=int, default=0, help="ranks for all-reduce (0: all)")
    parser.add_argument("--iterations", type=int, help="timed iterations (default DeepBench's)")
    parser.add_argument("--max-seconds", type=float, default=2.0, help="cap per case (default 2)")
    return parser


def _counts(text: str) -> list[int]:
    try:
        counts = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        counts = []
    if not counts or min(counts) < 0:
        raise argparse.ArgumentTypeError(f"expected GPU counts like 1,2,4,8 (0: all), got {text!r}")
    return counts


def _models_parser() -> argparse.ArgumentParser:
    from dltui.bench import plan

    parser = argparse.ArgumentParser(
        prog="dltui bench models",
        description="Train CNNs (ResNet-50, VGG-16, GoogLeNet, AlexNet) on synthetic "
        "ImageNet-shaped data and print images/s: on one GPU, a scale-up sweep over GPU counts, "
        "or one run across servers. With --data and --target-accuracy, train on a folder of "
        "images until the held-out top-1 reaches the target (time to accuracy).",
        epilog="Defaults are the fast choices for the device: on a GPU bf16, channels-last, "
        "compiled, and each model's tuned batch; on a CPU fp32, eager, tf_cnn_benchmarks' batch.",
    )
    _agents_options(parser, "with --scale-out")
    parser.add_argument(
        "--scale-out",
        action="store_true",
        help="one run across the --agent servers (after baselines on the first)",
    )
    parser.add_argument(
        "--no-baseline",
        action="store_true",
        help="with --scale-out: skip the one-GPU and one-server baselines",
    )
    parser.add_argument("--framework", choices=plan.FRAMEWORKS, default="torch")
    parser.add_argument(
        "--model",
        type=_names(plan.MODELS),
        default=["resnet50"],
        metavar="M,M",
        help=f"models ({','.join(plan.MODELS)}); default resnet50",
    )
    parser.add_argument(
        "--gpus",
        type=_counts,
        default=None,
        metavar="N,N",
        help="GPU counts, a scale-up sweep (default 1; with --scale-out 0: all)",
    )
    parser.add_argument("--batch", type=int, help="images per GPU per step")
    parser.add_argument("--precision", choices=plan.MODEL_PRECISIONS)
    parser.add_argument("--channels-last", action=argparse.BooleanOptionalAction, default=None)
    parser.add_argument(
        "--compile", action=argparse.BooleanOptionalAction, default=None, help="torch.compile / XLA"
    )
    parser.add_argument("--warmup", type=int, default=10, help="untimed steps (default 10)")
    parser.add_argument("--steps", type=int, default=100, help="timed steps (default 100)")
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--classes", type=int, default=1000)
    parser.add_argument("--device", choices=plan.DEVICES, default="auto")
    parser.add_argument("--learning-rate", type=float, default=0.1)
    parser.add_argument(
        "--data", metavar="DIR", help="a folder of images on the agent, one sub-folder per class"
    )
    parser.add_argument(
        "--target-accuracy",
        type=float,
        metavar="TOP1",
        help="held-out top-1 (0-1) that ends a --data run",
    )
    parser.add_argument("--max-epochs", type=int, default=50)
    return parser


def _record_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dltui record",
        description="Record every frame from agents to a file, headless (for cron and CI).",
    )
    parser.add_argument("agents", nargs="*", type=_target, metavar="AGENT", help="default: local")
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="FILE")
    parser.add_argument("--duration", type=float, metavar="S", help="stop after S seconds")
    parser.add_argument(
        "--plan", type=Path, metavar="FILE", help="a TOML plan to run while recording; stop after"
    )
    parser.add_argument("--rate", type=_rate, default=10.0, help="samples per second (default 10)")
    add_connection_options(parser)
    return parser


def _secret(parser: argparse.ArgumentParser, path: str | None) -> bytes | None:
    if path is None:
        return None
    try:
        return load_secret(path)
    except SecretFileError as exc:
        parser.error(str(exc))


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
    secret = _secret(parser, args.secret_file)
    tls = _server_tls(parser, args)
    logging.basicConfig(
        level=args.log_level.upper(),
        stream=sys.stderr,
        format="%(asctime)s dltui-agent %(levelname)s %(message)s",
    )
    from dltui.agent.main import run

    listen = None if args.stdio else args.listen
    return run(listen=listen, rate_hz=args.rate, secret=secret, tls=tls)


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
    secret = _secret(parser, args.secret_file)
    from dltui.client.probe import probe

    (target,) = reach(parser, args, [args.agent])
    return probe(target, secret, as_json=args.json)


def _run_bench(argv: list[str]) -> int:
    if not argv or argv[0] not in ("kernels", "models"):
        print("usage: dltui bench kernels|models [options]   (see dltui bench models --help)")
        return 2
    from dltui.client.campaign import is_across
    from dltui.client.run_job import run
    from dltui.protocol.messages import KernelPlan, ModelPlan

    parser = _bench_parser() if argv[0] == "kernels" else _models_parser()
    args = parser.parse_args(argv[1:])
    secret = _secret(parser, args.secret_file)
    targets = reach(parser, args, args.agent or [Target("local")])
    plan: KernelPlan | ModelPlan
    if argv[0] == "kernels":
        plan = KernelPlan(
            framework=args.framework,
            shape_set=args.shape_set,
            kinds=args.kind,
            precisions=args.precision,
            device=args.device,
            gpus=args.gpus,
            iterations=args.iterations,
            max_seconds=args.max_seconds,
            timeout_s=args.timeout,
        )
        across = is_across(plan, len(targets))
    else:
        data = str(Path(args.data).absolute()) if args.data else None
        plan = ModelPlan(
            framework=args.framework,
            models=args.model,
            gpus=args.gpus or [0 if args.scale_out else 1],
            batch=args.batch,
            precision=args.precision,
            channels_last=args.channels_last,
            compile=args.compile,
            warmup=args.warmup,
            steps=args.steps,
            image_size=args.image_size,
            classes=args.classes,
            device=args.device,
            learning_rate=args.learning_rate,
            data_dir=data,
            target_accuracy=args.target_accuracy,
            max_epochs=args.max_epochs,
            timeout_s=args.timeout,
        )
        across = args.scale_out
    return run(targets, plan, secret, args.json, across, args.rendezvous,
               baselines=not getattr(args, "no_baseline", False))  # fmt: skip


def _run_record(argv: list[str]) -> int:
    parser = _record_parser()
    args = parser.parse_args(argv)
    if args.duration is not None and not args.duration > 0:
        parser.error("--duration must be a positive number of seconds")
    secret = _secret(parser, args.secret_file)
    from dltui.recording.record import run

    plans = []
    if args.plan is not None:
        from dltui.bench.plan import PlanError, load_plans

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
    secret = _secret(parser, args.secret_file)
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
