"""`dltui agent --listen HOST:PORT | --stdio`: serve this server's telemetry and benchmarks."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import TYPE_CHECKING, Literal

from dltui.agent.config import (
    MAX_NVML_TIMEOUT_S,
    METRICS_PORT,
    cpu_choice,
    data_dirs,
    load_config,
)
from dltui.commands import exit_status
from dltui.commands.options import add_rate_option, listen_argument, number_argument, secret_option
from dltui.errors import UsageError
from dltui.protocol.address import parse_host_port

if TYPE_CHECKING:
    import ssl

    from dltui.agent.metrics_server import MetricsOptions


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dltui agent",
        description="Sample this server's GPUs and host and serve the telemetry to clients.",
        epilog=exit_status.epilog(exit_status.OK, exit_status.FAILED, exit_status.USAGE),
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--listen",
        metavar="HOST:PORT",
        type=listen_argument,
        help="serve over TCP (port 0: any free port)",
    )
    where.add_argument("--stdio", action="store_true", help="serve one client on stdin/stdout")
    add_rate_option(parser)
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning"])
    parser.add_argument(
        "--nvml-timeout", type=number_argument(MAX_NVML_TIMEOUT_S, "seconds"), default=30.0,
        metavar="S", help="go on without GPUs if NVML has not started in S seconds (default 30)",
    )  # fmt: skip
    parser.add_argument(
        "--cpu", type=_cpu, metavar="N|any",
        help="keep the agent's threads on CPU N (default: the last it may use; any: wherever "
        "the kernel puts them); its benchmarks run on all",
    )  # fmt: skip
    parser.add_argument(
        "--config", metavar="FILE", help="read these options from a TOML file (see agents/)"
    )
    parser.add_argument(
        "--data-dir", action="append", type=_data_dir, metavar="DIR", dest="data_dir",
        help="a folder time-to-accuracy plans may read, with those inside it (repeat for more; "
        "default: none; replaces the config's data_dirs)",
    )  # fmt: skip
    parser.set_defaults(data_dirs=(), alert=[])  # the config's data_dirs and alert rules
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
    metrics = parser.add_argument_group("Prometheus")
    metrics.add_argument(
        "--metrics", metavar="HOST:PORT", type=_metrics_address,
        help=f"serve /metrics for Prometheus there (port {METRICS_PORT} if none is given); "
        "beyond loopback only with TLS or --metrics-insecure",
    )  # fmt: skip
    metrics.add_argument("--metrics-tls-cert", metavar="FILE", help="serve /metrics over HTTPS")
    metrics.add_argument("--metrics-tls-key", metavar="FILE", help="that certificate's key (PEM)")
    metrics.add_argument(
        "--metrics-tls-client-ca", metavar="FILE",
        help="let in only scrapers with a client certificate this CA signed",
    )  # fmt: skip
    metrics.add_argument(
        "--metrics-insecure", action="store_true",
        help="serve /metrics in plain HTTP beyond loopback: anyone who reaches the port reads "
        "what the server is and does",
    )  # fmt: skip
    return parser


def run(parser: argparse.ArgumentParser, argv: list[str]) -> int:
    args = parser.parse_args(argv)
    if args.config is not None:  # the file's settings are defaults: the command line wins
        settings = load_config(args.config)
        if args.listen is not None:  # over the file's `stdio = true`, too
            settings.pop("stdio", None)
        parser.set_defaults(**settings)
        args = parser.parse_args(argv)
    if not args.stdio and args.listen is None:
        raise UsageError("one of --listen HOST:PORT or --stdio is required (or listen in --config)")
    _without_openssl(serves_tls=bool(args.tls_cert or args.metrics))
    secret = secret_option(args.secret_file)
    tls = _server_tls(args)
    logging.basicConfig(
        level=args.log_level.upper(),
        stream=sys.stderr,
        format="%(asctime)s dltui-agent %(levelname)s %(message)s",
    )
    from dltui.agent.main import run as serve

    listen = None if args.stdio else args.listen
    folders = tuple(args.data_dir or args.data_dirs)
    return serve(listen, args.rate, secret, tls, args.nvml_timeout, folders, args.alert,
                 _metrics(args), args.cpu)  # fmt: skip


def _without_openssl(serves_tls: bool) -> None:
    """Keep OpenSSL out of the agent's memory, paid on every server it is left running on
    (what it weighs: docs/results/telemetry-h200.md): hashlib's, as Python's own SHA-256 does
    the agent's few hashes; and where it serves no TLS (nor /metrics, whose library imports
    ssl) the ssl module, which asyncio imports wherever it can. Marked missing, both are taken
    for a Python built without them. Called before anything here imports hashlib."""
    sys.modules.setdefault("_hashlib", None)  # type: ignore[arg-type]
    if not serves_tls:
        sys.modules.setdefault("ssl", None)  # type: ignore[arg-type]


def _cpu(text: str) -> int | Literal["any"]:
    try:
        return cpu_choice(int(text) if text.isdigit() else text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _data_dir(text: str) -> str:
    try:
        (folder,) = data_dirs([text])
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return folder


def _metrics_address(text: str) -> tuple[str, int]:
    try:
        host, port = parse_host_port(text, METRICS_PORT, "metrics address")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    assert port is not None  # METRICS_PORT fills a missing one in
    return host, port


def _metrics(args: argparse.Namespace) -> MetricsOptions | None:
    """Where and how to serve /metrics; UsageError for what cannot be done safely."""
    tls_files = (args.metrics_tls_cert, args.metrics_tls_key, args.metrics_tls_client_ca)
    if args.metrics is None:
        if any(tls_files) or args.metrics_insecure:
            raise UsageError("the --metrics-* options need --metrics HOST:PORT")
        return None
    if bool(args.metrics_tls_cert) != bool(args.metrics_tls_key):
        raise UsageError("--metrics-tls-cert and --metrics-tls-key go together")
    if args.metrics_tls_client_ca and not args.metrics_tls_cert:
        raise UsageError("--metrics-tls-client-ca needs --metrics-tls-cert and --metrics-tls-key")
    from dltui.agent.listener import server_context
    from dltui.agent.metrics_server import MetricsOptions

    tls = None
    if args.metrics_tls_cert:
        try:
            tls = server_context(*tls_files)
        except OSError as exc:  # ssl.SSLError is one
            raise UsageError(f"cannot use the metrics TLS files: {exc}") from exc
    host, port = args.metrics
    options = MetricsOptions(host, port, tls, args.metrics_insecure)
    options.check()
    return options


def _server_tls(args: argparse.Namespace) -> ssl.SSLContext | None:
    if bool(args.tls_cert) != bool(args.tls_key):
        raise UsageError("--tls-cert and --tls-key go together")
    if args.tls_cert is None:
        if args.tls_client_ca:
            raise UsageError("--tls-client-ca needs --tls-cert and --tls-key")
        return None
    if args.stdio:
        raise UsageError("TLS is for --listen; over --stdio the pipe (or ssh) is the channel")
    from dltui.agent.listener import server_context

    try:
        return server_context(args.tls_cert, args.tls_key, args.tls_client_ca)
    except OSError as exc:  # ssl.SSLError is one
        raise UsageError(f"cannot use the TLS files: {exc}") from exc
