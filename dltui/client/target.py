"""What the user names on the command line: an agent and how to reach it.

    local                       an agent started here, over a pipe
    HOST[:PORT], [IPv6]:PORT    TCP (TLS when the client is given TLS options)
    tls://HOST[:PORT]           TLS, always
    ssh://[USER@]HOST[:PORT]    `dltui agent --stdio` started on HOST by the system's ssh client

Hosts and users are checked here, once: nothing that could read as an ssh option or mean
something to a shell gets through.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, replace
from typing import Literal

from dltui.protocol.address import DEFAULT_PORT, parse_host_port

DEFAULT_REMOTE_DLTUI = ("dltui",)

TargetKind = Literal["tcp", "tls", "ssh", "local"]

_USER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,31}")


@dataclass(frozen=True, slots=True)
class TlsOptions:
    """How a client checks an agent's certificate and proves itself (mutual TLS)."""

    ca: str | None = None
    """PEM file of the CA that signs the agents' certificates; None: the system's trust store."""
    cert: str | None = None
    key: str | None = None


@dataclass(frozen=True, slots=True)
class SshOptions:
    remote_dltui: tuple[str, ...] = DEFAULT_REMOTE_DLTUI
    """How to run dltui on the remote host, as words; `agent --stdio` is appended."""
    config: str | None = None
    """An ssh_config file to use instead of the user's (ssh -F)."""


@dataclass(frozen=True, slots=True)
class Target:
    kind: TargetKind
    host: str = ""
    port: int | None = DEFAULT_PORT
    """None only for ssh, where ssh's own configuration picks the port."""
    user: str | None = None
    tls: TlsOptions | None = None
    ssh: SshOptions | None = None

    @property
    def label(self) -> str:
        if self.kind == "local":
            return "local"
        host = f"[{self.host}]" if ":" in self.host else self.host
        if self.kind == "ssh":
            user = f"{self.user}@" if self.user else ""
            port = f":{self.port}" if self.port else ""
            return f"ssh://{user}{host}{port}"
        address = f"{host}:{self.port}"
        return f"tls://{address}" if self.kind == "tls" else address

    @property
    def starts_agent(self) -> bool:
        """Whether reaching this target starts its agent (`dltui agent --stdio`), so its first
        frame waits for the agent's start, NVML's included."""
        return self.kind in ("local", "ssh")

    def reached_with(self, tls: TlsOptions | None, ssh: SshOptions | None) -> Target:
        """This target with the client's TLS and SSH options: a bare HOST:PORT uses TLS when
        any TLS option is given, so `--tls-ca` alone secures every TCP agent."""
        if self.kind == "tcp" and tls is not None:
            return replace(self, kind="tls", tls=tls)
        if self.kind == "tls":
            return replace(self, tls=tls or TlsOptions())
        if self.kind == "ssh":
            return replace(self, ssh=ssh or SshOptions())
        return self


def parse_target(text: str) -> Target:
    """Parse an agent address; a ValueError says what is wrong with it."""
    text = text.strip()
    if text == "local":
        return Target("local")
    scheme, sep, rest = text.partition("://")
    if not sep:
        scheme, rest = "tcp", text
    if scheme == "ssh":
        return _parse_ssh(text, rest)
    if scheme not in ("tcp", "tls"):
        raise ValueError(f"bad agent address {text!r}: unknown scheme {scheme}:// (tls, ssh)")
    host, port = parse_host_port(rest, lowest_port=1)
    return Target("tls" if scheme == "tls" else "tcp", host, port)


def _parse_ssh(text: str, rest: str) -> Target:
    user, at, hostport = rest.rpartition("@")
    if at and not _USER.fullmatch(user):
        raise ValueError(f"bad agent address {text!r}: {user!r} is not a user name")
    host, port = parse_host_port(hostport, default_port=None, lowest_port=1)
    return Target("ssh", host, port, user or None)


def parse_remote_dltui(text: str) -> tuple[str, ...]:
    """The words of `--remote-dltui`, e.g. "/opt/dltui/bin/dltui" or "python3 -m dltui"."""
    try:
        words = tuple(shlex.split(text))
    except ValueError as exc:
        raise ValueError(f"bad remote command {text!r}: {exc}") from None
    if not words:
        raise ValueError("the remote command is empty")
    return words
