"""What the user names on the command line: `host:port`, `[ipv6]:port`, or `local`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

DEFAULT_PORT = 7070


@dataclass(frozen=True, slots=True)
class Target:
    kind: Literal["tcp", "local"]
    host: str = ""
    port: int = DEFAULT_PORT

    @property
    def label(self) -> str:
        if self.kind == "local":
            return "local"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


def parse_target(text: str) -> Target:
    """Parse an agent address; a ValueError says what is wrong with it."""
    text = text.strip()
    if text == "local":
        return Target("local")
    host, port = parse_host_port(text)
    if port == 0:
        raise ValueError(f"bad agent address {text!r}: port must be 1-65535")
    return Target("tcp", host, port)


def parse_host_port(text: str) -> tuple[str, int]:
    """`host`, `host:port` or `[ipv6]:port`; port 0 (any free port) is allowed here."""
    text = text.strip()
    if text.startswith("["):
        host, sep, rest = text[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            raise ValueError(f"bad agent address {text!r}: expected [IPv6]:PORT")
        port_text = rest[1:]
    elif text.count(":") == 1:
        host, port_text = text.split(":")
    elif ":" not in text:
        host, port_text = text, ""
    else:
        raise ValueError(f"bad agent address {text!r}: write IPv6 addresses as [ADDRESS]:PORT")
    if not host:
        raise ValueError(f"bad agent address {text!r}: no host")
    if not port_text:
        return host, DEFAULT_PORT
    if not port_text.isdigit() or not 0 <= int(port_text) < 65536:
        raise ValueError(f"bad agent address {text!r}: port must be 1-65535")
    return host, int(port_text)
