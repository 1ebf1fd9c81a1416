"""Which connections the metrics port keeps: a budget per address, and who makes room.

Anyone who can reach the port can open connections and keep them open (HTTP keep-alive), so
one address holds at most `PER_ADDRESS` (an IPv6 /64 counts as one address) and all of them at
most `TOTAL`. A newcomer that finds its address's share, or the whole budget, taken pushes out a
connection that is doing nothing: the one idle longest between requests, else the oldest that
has not begun its first request, taken from its own address's share, or (the budget full) from
the address holding the most. A connection reading a request or writing an answer is never
pushed out (its own deadlines bound it); when every one is, the newcomer is closed. So keeping
connections open costs only the address that does it, and a scraper from elsewhere gets in.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

from dltui.agent.admission import source_of

PER_ADDRESS = 4
TOTAL = 16

State = Literal["new", "busy", "idle"]


@dataclass(eq=False)
class Held:
    """One open connection: its address, what it is doing and since when."""

    address: str
    state: State = "new"
    since: float = field(default_factory=time.monotonic)
    task: asyncio.Task[None] | None = None

    def now(self, state: State) -> None:
        self.state, self.since = state, time.monotonic()


class Budget:
    def __init__(self, per_address: int = PER_ADDRESS, total: int = TOTAL) -> None:
        self.per_address = per_address
        self.total = total
        self.held: set[Held] = set()
        self.pushed_out = 0
        """Connections closed to make room, since the start."""

    def admit(self, host: str) -> Held | None:
        """A place for a connection from `host`, made by pushing out an idle one if need be;
        None when there is none to be had."""
        address = source_of(host)
        counts = Counter(held.address for held in self.held)
        if counts[address] >= self.per_address:
            victims = [held for held in self.held if held.address == address]
        elif len(self.held) >= self.total:
            most = max(counts.values())
            crowded = {a for a, count in counts.items() if count == most}
            victims = [held for held in self.held if held.address in crowded]
        else:
            victims = []
        if victims or counts[address] >= self.per_address or len(self.held) >= self.total:
            victim = _idlest(victims)
            if victim is None:
                return None
            self.release(victim)
            if victim.task is not None:
                victim.task.cancel()
            self.pushed_out += 1
        held = Held(address)
        self.held.add(held)
        return held

    def release(self, held: Held) -> None:
        self.held.discard(held)


def _idlest(candidates: list[Held]) -> Held | None:
    """Idle longest between requests, else the oldest yet to begin one; never one at work."""
    for state in ("idle", "new"):
        waiting = [held for held in candidates if held.state == state]
        if waiting:
            return min(waiting, key=lambda held: held.since)
    return None
