"""A probe: one agent's welcome and one sample, taken once its slow fields have arrived, and
the health events the agent sent meanwhile (the conditions up come right after the welcome)."""

from __future__ import annotations

from collections.abc import Callable

from dltui.client.session import FAILED, ClientSession, Unreachable
from dltui.client.target import Target
from dltui.protocol.messages import ConnectionState, Event, Message, Sample, Welcome

FIRST_SAMPLE_TIMEOUT = 10.0
SETTLE = 1.2  # seconds: slow fields (GPM, clocks, ECC) come every 0.5-1 s
RATE_HZ = 10.0


async def probe(
    target: Target, secret: bytes | None, busy: Callable[[str], None] = lambda _: None
) -> tuple[Welcome, Sample, list[Event]]:
    """Unreachable when the agent cannot be reached, refuses us, stays busy or sends no sample
    in time; `busy` hears why, the first time the agent says it has no room."""
    samples: list[Sample] = []
    lost: list[ConnectionState] = []
    told_busy: list[ConnectionState] = []
    events: list[Event] = []

    def keep(source: str, message: Message) -> None:
        if isinstance(message, Sample):
            samples.append(message)
        elif isinstance(message, Event):
            events.append(message)
        elif isinstance(message, ConnectionState) and message.state in FAILED:
            lost.append(message)
        elif isinstance(message, ConnectionState) and message.state == "busy":
            if not told_busy:
                busy(message.detail or "busy")
            told_busy.append(message)

    def settled() -> bool:
        return bool(lost) or (bool(samples) and samples[-1].mono >= samples[0].mono + SETTLE)

    session = ClientSession([target], secret, RATE_HZ)
    session.subscribe(keep)
    async with session:
        await session.welcomed()
        try:
            await session.until(settled, FIRST_SAMPLE_TIMEOUT + SETTLE)
        except TimeoutError:
            reason = f"no sample within {FIRST_SAMPLE_TIMEOUT + SETTLE:g} s"
            raise Unreachable(target, reason, refused=False) from None
        if lost:
            link = lost[-1]
            raise Unreachable(target, link.detail or link.state, link.state == "auth_failed")
        (welcome,) = session.welcomes().values()
        return welcome, samples[-1], events
