"""Slowing down a host that keeps failing to authenticate.

A host's attempts are checked one at a time, and each failure holds its turn for a pause that
doubles (0.1 s, 0.2 s, 0.4 s … up to 5 s), so opening many connections at once buys a guesser
nothing. A success clears the host's count. The table is bounded: past `max_hosts` the oldest
entries are forgotten.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

log = logging.getLogger(__name__)

FIRST_DELAY = 0.1
DELAY_CAP = 5.0
MAX_HOSTS = 4096


def peer_host(peer: str) -> str:
    return peer.rsplit(":", 1)[0]


class AuthThrottle:
    def __init__(self, max_hosts: int = MAX_HOSTS) -> None:
        self.max_hosts = max_hosts
        self.failures: dict[str, int] = {}
        self._turns: dict[str, tuple[asyncio.Lock, list[int]]] = {}
        """host -> (its turn, [connections holding or waiting for it])"""

    def delay(self, host: str) -> float:
        """The pause after this host's next failure."""
        count = self.failures.get(host, 0) + 1
        return min(FIRST_DELAY * 2.0 ** (count - 1), DELAY_CAP)

    async def check(self, peer: str, verify: Callable[[], bool]) -> bool:
        """Run `verify` in this host's turn; on failure, pause before giving the turn up."""
        host = peer_host(peer)
        turn, users = self._turns.setdefault(host, (asyncio.Lock(), [0]))
        users[0] += 1
        try:
            async with turn:
                if verify():
                    self.failures.pop(host, None)
                    return True
                pause = self.delay(host)
                self.failures[host] = self.failures.pop(host, 0) + 1  # newest last
                while len(self.failures) > self.max_hosts:
                    del self.failures[next(iter(self.failures))]
                log.warning(
                    "authentication failed from %s (%d in a row)", peer, self.failures[host]
                )
                await asyncio.sleep(pause)
                return False
        finally:
            users[0] -= 1
            if not users[0]:
                del self._turns[host]
