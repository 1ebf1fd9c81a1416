"""Agent addresses as people write them: `host`, `host:port` or `[ipv6]:port`."""

from __future__ import annotations

import ipaddress
import re

from dltui.protocol.errors import quote

DEFAULT_PORT = 7070
_LABEL = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,62}")
"""One dot-separated part of a name: 1-63 characters, as resolvers take them (a longer or an
empty one fails in the resolver's own encoding, not as a name that is not found)."""


def is_host(text: str) -> bool:
    """A DNS name, an ssh_config alias or an IP address (IPv6 included); never starting with
    "-", which ssh would read as an option, and nothing a shell would read."""
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        pass
    name = text.removesuffix(".")  # a fully qualified name may end with its root's dot
    return len(name) <= 253 and all(_LABEL.fullmatch(label) for label in name.split("."))


def parse_host_port(
    text: str,
    default_port: int | None = DEFAULT_PORT,
    what: str = "agent address",
    lowest_port: int = 0,
) -> tuple[str, int | None]:
    """`host`, `host:port` or `[ipv6]:port`; a port from `lowest_port` (0, any free port, for
    an address to listen on; 1 for one to reach). `what` names the address in an error."""
    text = text.strip()
    bad = f"bad {what} {quote(text)}"
    if text.startswith("["):
        host, sep, rest = text[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            raise ValueError(f"{bad}: expected [IPv6]:PORT")
        port_text = rest[1:]
        if rest == ":":
            raise ValueError(f"{bad}: no port after ':'")
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise ValueError(f"{bad}: {quote(host)} is not IPv6") from None
    elif text.count(":") == 1:
        host, port_text = text.split(":")
        if not port_text:
            raise ValueError(f"{bad}: no port after ':'")
    elif ":" not in text:
        host, port_text = text, ""
    else:
        raise ValueError(f"{bad}: write IPv6 addresses as [ADDRESS]:PORT")
    if not host:
        raise ValueError(f"{bad}: no host")
    if not is_host(host):
        raise ValueError(f"{bad}: {quote(host)} is not a host name or address")
    if not port_text:
        return host, default_port
    digits = port_text.isascii() and port_text.isdigit() and len(port_text) <= 5
    if not digits or not lowest_port <= int(port_text) <= 65535:
        raise ValueError(f"{bad}: port must be {lowest_port}-65535")
    return host, int(port_text)
