"""Who may wait to log in: a budget of its own for connections that have not authenticated.

Anyone who can reach the port can open connections, so those that have not yet proved who they
are get a small budget apart from the clients': at most `PER_SOURCE` from one address (an IPv6
/64 counts as one address) and `TOTAL` in all, each for at most `DEADLINE` seconds from accept
to welcome. One more from an address at its limit is told `busy` and closed at once; one more
when all `TOTAL` are taken pushes out the oldest connection of the address that holds the most.
So a flood from one address costs that address alone, and a flood from many churns through
itself: a client that logs in promptly is never the one pushed out while others wait in twos.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from collections import defaultdict
from collections.abc import Callable

log = logging.getLogger(__name__)

PER_SOURCE = 8
TOTAL = 64
DEADLINE = 5.0
"""Seconds from accept to welcome: a TLS handshake and an HMAC round trip, over a slow link."""
LOG_EVERY = 10.0
"""Turned-away connections are logged as a count this often, not one line each."""

Expire = Callable[[str, str], object]
"""How to end a waiting connection at the stage it has reached: (error code, detail)."""


def source_of(host: str) -> str:
    """What counts as one address: an IPv4 address, or an IPv6 /64 (one host's usual share)."""
    try:
        address = ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


class Waiting:
    """One connection waiting to log in; ended by `expire` when its time is up or it is pushed
    out, or released once it has logged in (or gone)."""

    def __init__(self, admission: Admission, source: str, expire: Expire) -> None:
        self.source = source
        self._admission = admission
        self._expire = expire
        self._timer = asyncio.get_running_loop().call_later(
            admission.deadline, self._end, "timeout", "no handshake in time"
        )

    def on_expire(self, expire: Expire) -> None:
        """How to end it from now on (the listener's way first, then the client connection's)."""
        self._expire = expire

    def release(self) -> None:
        """It logged in or went away: its place is free (calling again does nothing)."""
        self._timer.cancel()
        self._admission.forget(self)
        self._expire = _ignore  # its owner holds this waiting: no cycle back to the owner

    def _end(self, code: str, detail: str) -> None:
        expire = self._expire
        self.release()
        expire(code, detail)


def _ignore(code: str, detail: str) -> None:
    """A released waiting's expiry: nothing left to end."""


class Admission:
    def __init__(
        self, per_source: int = PER_SOURCE, total: int = TOTAL, deadline: float = DEADLINE
    ) -> None:
        self.per_source = per_source
        self.total = total
        self.deadline = deadline
        self._by_source: defaultdict[str, list[Waiting]] = defaultdict(list)
        """Each address's waiting connections, oldest first."""
        self.count = 0
        self.turned_away = 0
        self._logged_at = float("-inf")

    def admit(self, host: str, expire: Expire) -> Waiting | None:
        """A place for a new connection from `host`, or None when its address has all of its
        own (the caller says `busy` and closes). May push out another connection first."""
        source = source_of(host)
        if len(self._by_source.get(source, ())) >= self.per_source:
            self._turn_away()
            return None
        if self.count >= self.total:
            self._push_out()
        waiting = Waiting(self, source, expire)
        self._by_source[source].append(waiting)
        self.count += 1
        return waiting

    def forget(self, waiting: Waiting) -> None:
        queue = self._by_source.get(waiting.source)
        if queue is None or waiting not in queue:
            return
        queue.remove(waiting)
        self.count -= 1
        if not queue:
            del self._by_source[waiting.source]

    def _push_out(self) -> None:
        """End the oldest connection of the address holding the most places."""
        fullest = max(self._by_source.values(), key=len)
        self._turn_away()
        fullest[0]._end("busy", "too many connections are waiting to log in; try again")

    def _turn_away(self) -> None:
        self.turned_away += 1
        now = asyncio.get_running_loop().time()
        if now - self._logged_at >= LOG_EVERY:
            log.warning(
                "%d connection(s) turned away so far: more were waiting to log in than the "
                "agent allows (%d per address, %d in all)",
                self.turned_away, self.per_source, self.total,
            )  # fmt: skip
            self._logged_at = now
