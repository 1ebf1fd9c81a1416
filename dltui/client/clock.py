"""Round-trip time and clock offset of one agent, estimated from ping/pong exchanges.

As NTP does: each exchange gives offset = agent_wall - midpoint of the client's send and
receive wall times, with an error bound of half its RTT; the exchange with the smallest RTT in
a recent window is the most trustworthy, so that one is used.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Exchange:
    rtt: float
    offset: float


class ClockEstimator:
    def __init__(self, window: int = 16) -> None:
        self._exchanges: deque[Exchange] = deque(maxlen=window)

    def add(self, sent_wall: float, rtt: float, agent_wall: float) -> None:
        """One exchange: the client's wall clock at sending, the RTT (measured on a monotonic
        clock) and the agent's wall clock when it answered."""
        rtt = max(0.0, rtt)
        self._exchanges.append(Exchange(rtt, agent_wall - (sent_wall + rtt / 2)))

    @property
    def rtt(self) -> float | None:
        """The latest round-trip time, seconds."""
        return self._exchanges[-1].rtt if self._exchanges else None

    @property
    def offset(self) -> float | None:
        """Agent clock minus client clock, seconds, from the best recent exchange."""
        if not self._exchanges:
            return None
        return min(self._exchanges, key=lambda e: e.rtt).offset
