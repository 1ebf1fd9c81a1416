"""The options every command that connects to agents shares (the TUI, probe, bench, record):
the agents, the secret, TLS and SSH, and the targets they apply to; and the argument types
that turn words into checked values."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from dltui.agent.config import in_range
from dltui.client.scale_out import DEFAULT_RENDEZVOUS_PORT
from dltui.client.target import (
    DEFAULT_REMOTE_DLTUI,
    SshOptions,
    Target,
    TlsOptions,
    parse_remote_dltui,
    parse_target,
)
from dltui.errors import UsageError
from dltui.outfiles import unwritable
from dltui.protocol.address import DEFAULT_PORT, parse_host_port
from dltui.protocol.messages import MAX_RATE_HZ
from dltui.userfiles import SecretFileError, load_secret


def number_argument(high: float, unit: str) -> Callable[[str], float]:
    """argparse's type for a number in (0, high]."""

    def number(text: str) -> float:
        try:
            return in_range(float(text), high, unit)
        except ValueError:
            message = f"expected {unit} in (0, {high:g}], got {text!r}"
            raise argparse.ArgumentTypeError(message) from None

    return number


def output_argument(text: str) -> Path:
    """argparse's type for a file a command will write, refused before any work is done."""
    target = Path(text)
    if (problem := unwritable(target)) is not None:
        raise argparse.ArgumentTypeError(f"cannot write {text}: {problem}")
    return target


def add_rate_option(parser: argparse.ArgumentParser) -> None:
    rate = number_argument(MAX_RATE_HZ, "a number of Hz")
    parser.add_argument("--rate", type=rate, default=10.0, help="samples per second (default 10)")


def target_argument(text: str) -> Target:
    """argparse's type for an AGENT."""
    try:
        return parse_target(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def listen_argument(text: str) -> tuple[str, int]:
    """argparse's type for a HOST:PORT an agent listens on (its port if none is given)."""
    return _host_port(text, DEFAULT_PORT, "agent address")


def rendezvous_argument(text: str) -> tuple[str, int]:
    """argparse's type for a HOST:PORT where a run's rank 0 waits: torch.distributed's
    customary port if none is given, never the agent's, which an agent on that host holds."""
    return _host_port(text, DEFAULT_RENDEZVOUS_PORT, "rendezvous address", lowest_port=1)


def _host_port(text: str, default_port: int, what: str, lowest_port: int = 0) -> tuple[str, int]:
    try:
        host, port = parse_host_port(text, default_port, what, lowest_port)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc
    assert port is not None  # the default port fills a missing one in
    return host, port


def secret_option(path: str | None) -> bytes | None:
    """The secret in `--secret-file`; UsageError when the file cannot be used."""
    if path is None:
        return None
    try:
        return load_secret(path)
    except SecretFileError as exc:
        raise UsageError(str(exc)) from exc


def _remote_dltui(text: str) -> tuple[str, ...]:
    try:
        return parse_remote_dltui(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def add_connection_options(parser: argparse.ArgumentParser) -> None:
    """How every command that connects reaches agents: the same options everywhere."""
    group = parser.add_argument_group(
        "reaching agents",
        "AGENT is local, HOST[:PORT], tls://HOST[:PORT] or ssh://[USER@]HOST[:PORT]. "
        "Any --tls-* option makes HOST:PORT agents use TLS too.",
    )
    group.add_argument(
        "--secret-file",
        metavar="FILE",
        help="shared secret for agents reached over the network (mode 0600)",
    )
    group.add_argument(
        "--tls-ca", metavar="FILE", help="CA (PEM) that signed the agents' certificates "
        "(default: the system's trust store)"
    )  # fmt: skip
    group.add_argument(
        "--tls-cert", metavar="FILE", help="client certificate (PEM), for agents that require "
        "one (mutual TLS)"
    )  # fmt: skip
    group.add_argument("--tls-key", metavar="FILE", help="the client certificate's key (PEM)")
    group.add_argument(
        "--ssh-config", metavar="FILE", help="ssh_config for ssh:// agents (default: ssh's own)"
    )
    group.add_argument(
        "--remote-dltui",
        metavar="CMD",
        type=_remote_dltui,
        default=DEFAULT_REMOTE_DLTUI,
        help="how ssh:// hosts run dltui (default: dltui on the remote PATH; e.g. "
        "'~/venv/bin/dltui' or 'python3 -m dltui')",
    )


def apply_connection_options(args: argparse.Namespace, targets: list[Target]) -> list[Target]:
    """The targets with the connection options applied, each once; TLS files are checked now
    so that a bad one is a usage error rather than every connection failing."""
    if bool(args.tls_cert) != bool(args.tls_key):
        raise UsageError("--tls-cert and --tls-key go together")
    tls = None
    if args.tls_ca or args.tls_cert:
        import ssl

        from dltui.client.tls import client_context

        tls = TlsOptions(args.tls_ca, args.tls_cert, args.tls_key)
        try:
            client_context(tls)
        except (OSError, ssl.SSLError) as exc:
            raise UsageError(f"cannot use the TLS files: {exc}") from exc
    ssh = SshOptions(args.remote_dltui, args.ssh_config)
    return list(dict.fromkeys(target.reached_with(tls, ssh) for target in targets))
