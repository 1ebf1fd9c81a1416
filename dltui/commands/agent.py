"""`dltui agent --listen HOST:PORT | --stdio`: serve this server's telemetry and benchmarks."""

from __future__ import annotations

import argparse
import logging
import ssl
import sys

from dltui.agent.config import MAX_NVML_TIMEOUT_S, data_dirs, load_config
from dltui.commands.options import add_rate_option, listen_argument, number_argument, secret_option
from dltui.errors import UsageError


def parser() -> argparse.ArgumentParser:
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
    add_rate_option(parser)
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning"])
    parser.add_argument(
        "--nvml-timeout", type=number_argument(MAX_NVML_TIMEOUT_S, "seconds"), default=30.0,
        metavar="S", help="go on without GPUs if NVML has not started in S seconds (default 30)",
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
    return parser


def run(parser: argparse.ArgumentParser, argv: list[str]) -> int:
    args = parser.parse_args(argv)
    if args.config is not None:  # the file's settings are defaults: the command line wins
        parser.set_defaults(**load_config(args.config))
        args = parser.parse_args(argv)
    if not args.stdio and args.listen is None:
        raise UsageError("one of --listen HOST:PORT or --stdio is required (or listen in --config)")
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
    return serve(listen, args.rate, secret, tls, args.nvml_timeout, folders, args.alert)


def _data_dir(text: str) -> str:
    try:
        (folder,) = data_dirs([text])
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return folder


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
    except (OSError, ssl.SSLError) as exc:
        raise UsageError(f"cannot use the TLS files: {exc}") from exc
