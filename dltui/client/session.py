"""The one client session: connect a set of agents, wait for their welcome, fan their frames out
to sinks, run plans over them, close. The TUI, `dltui record`, `dltui bench` and `dltui probe`
are its users; none of them holds a connection of its own.

Every frame from every agent goes, in arrival order, to each sink (the fleet, a recorder, a
printer: any `Callable[[source, message], None]`), then to the plan runs in progress, whose
campaigns learn from them how their jobs go.

**Waiting for agents: one policy.** A command that needs the agents (to run plans on them, to
probe one) waits for each agent's first attempt: its welcome, or the reason it failed, which
ends the wait at once as `Unreachable` (refused: wrong secret, certificate or ssh key; else
unreachable). Retrying would not mend a refusal, and a person or a cron job is better told
now which agent is down than after a minute of silence. An agent that answers `busy` (no room
now) has not failed: its connection tries again with backoff, and the wait goes on. Every
attempt is bounded by the handshake's own limit (45 s for an agent the client starts, past
its NVML deadline), so the wait ends by itself. The TUI does not wait: it shows each agent's
attempts as they go.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import Any

from dltui.client.connection import AgentConnection, handshake_timeout
from dltui.client.plan_run import PlanRun
from dltui.client.target import Target
from dltui.client.transport import OPEN_TIMEOUT
from dltui.errors import DltuiError
from dltui.protocol.messages import ConnectionState, JobState, Message, Welcome

log = logging.getLogger(__name__)

Sink = Callable[[str, Message], None]
"""Gets every frame: (source, message)."""

STOP_TIMEOUT = 5.0
"""How long close() waits for connections to end: a local agent gets 3 s to exit before it is
killed; allow for that."""
FAILED = ("offline", "auth_failed")


WATCH_BATCH_S = 0.5
"""How long each sample may wait at its agent for the TUI, which redraws each column twice a
second: samples sent in half-second batches reach the screen at most one redraw later, and the
agent's event loop wakes twice a second, not ten times. `dltui record` asks for each sample as it
is read: a recorder killed with kill -9 then loses only what it had not yet written."""


class Unreachable(DltuiError):
    """An agent did not answer its first attempt, refused us, or stayed busy."""

    def __init__(self, target: Target, reason: str, refused: bool, busy: bool = False) -> None:
        if busy:
            what = f"{target.label} is still busy"
        elif refused:
            what = f"{target.label} refused the connection"
        else:
            what = f"cannot reach {target.label}"
        super().__init__(f"{what}: {reason}")
        self.target, self.reason, self.refused = target, reason, refused
        self.kind = "busy" if busy else "refused" if refused else "unreachable"


class ClientSession:
    """Connections to a set of agents and everything that listens to them."""

    def __init__(
        self,
        targets: Iterable[Target],
        secret: bytes | None = None,
        rate_hz: float = 10.0,
        batch_s: float = 0.0,
    ) -> None:
        """`batch_s`: how long each sample may wait at its agent (see `Subscribe`)."""
        self.connections = [
            AgentConnection(target, self.deliver, secret, rate_hz, batch_s=batch_s)
            for target in targets
        ]
        self._sinks: list[Sink] = []
        self._runs: list[PlanRun] = []
        self._failures: dict[str, ConnectionState] = {}
        """Each agent's failure before its first welcome: what `welcomed` reports."""
        self._changed = asyncio.Event()
        self._running: dict[AgentConnection, asyncio.Task[Any]] = {}

    # --- frames ---------------------------------------------------------------------------

    def subscribe(self, sink: Sink) -> None:
        self._sinks.append(sink)

    def unsubscribe(self, sink: Sink) -> None:
        self._sinks.remove(sink)

    def deliver(self, source: str, message: Message) -> None:
        """Every frame from every connection (their `on_message`): to the sinks, then to the
        plan runs in progress."""
        for sink in self._sinks:
            sink(source, message)
        for run in self._runs:
            run.observe(source, message)
        if isinstance(message, ConnectionState) and message.state in FAILED:
            connection = self._by_source(source)
            if connection is not None and connection.welcome is None:
                self._failures.setdefault(source, message)
        self._changed.set()

    def _by_source(self, source: str) -> AgentConnection | None:
        return next((c for c in self.connections if c.source == source), None)

    def sources(self) -> dict[str, str]:
        """Each source, as frames name it, and the target it connects to (a recording's map)."""
        return {c.source: c.target.label for c in self.connections}

    def so_far(self) -> list[tuple[str, Message]]:
        """Who the agents are and how their links stand: what a sink that starts late has
        missed (a recording begins with them)."""
        welcomes = [(c.source, c.welcome) for c in self.connections if c.welcome is not None]
        links = [(c.source, c.link) for c in self.connections if c.link is not None]
        return [*welcomes, *links]

    def welcomes(self) -> dict[str, Welcome]:
        """Each agent's latest welcome: who it is (a recording started late begins with them)."""
        return {c.source: c.welcome for c in self.connections if c.welcome is not None}

    def names(self) -> dict[str, str]:
        """A name per source for people: the agent's hostname, or hostname@address where two
        agents share one."""
        welcomes = self.welcomes()
        hostnames = [welcome.inventory.hostname for welcome in welcomes.values()]
        return {
            source: hostname if hostnames.count(hostname) == 1 else f"{hostname}@{source}"
            for source, hostname in zip(welcomes, hostnames, strict=True)
        }

    async def until(self, condition: Callable[[], bool], timeout: float | None = None) -> None:
        """Wait for a frame after which `condition()` holds; TimeoutError after `timeout`."""
        async with asyncio.timeout(timeout):
            while not condition():
                self._changed.clear()
                await self._changed.wait()

    # --- connections ----------------------------------------------------------------------

    def start(self) -> None:
        """Run every connection as a task of this session (the TUI runs each as a worker of its
        own with `run_connection` instead)."""
        for connection in self.connections:
            run = self.run_connection(connection)
            self._running[connection] = asyncio.create_task(run, name=f"agent {connection.source}")

    async def run_connection(self, connection: AgentConnection) -> None:
        """Keep one agent connected until `close`. A connection that dies of a bug is logged
        and ends as the agent going offline, so no column, campaign or recording is left
        believing it live; it is not raised again, to a worker or a task nobody awaits."""
        task = asyncio.current_task()
        assert task is not None
        self._running[connection] = task
        try:
            await connection.run()
        except Exception as exc:
            log.exception("the connection to %s failed", connection.source)
            self.deliver(
                connection.source, ConnectionState("offline", time.time(), f"client error: {exc!r}")
            )
        finally:
            self._running.pop(connection, None)

    async def welcomed(self) -> None:
        """Wait until every agent has said who it is; Unreachable, as soon as one's first
        attempt fails, names it (see the module's note on the policy)."""
        limit = OPEN_TIMEOUT + max(
            (handshake_timeout(connection.target) for connection in self.connections), default=0
        )
        try:
            await self.until(
                lambda: self.failed_before_welcome() is not None or self._all_welcomed(), limit
            )
        except TimeoutError:
            silent = next(c for c in self.connections if c.welcome is None)
            if silent.state == "busy":  # told busy at every try, with backoff, until the limit
                reason = f"no room for us within {limit:g} s"
                raise Unreachable(silent.target, reason, False, busy=True) from None
            raise Unreachable(silent.target, f"no answer within {limit:g} s", False) from None
        failed = self.failed_before_welcome()
        if failed is not None:
            raise failed

    def _all_welcomed(self) -> bool:
        return all(connection.welcome is not None for connection in self.connections)

    def failed_before_welcome(self) -> Unreachable | None:
        """The first agent, in the targets' order, that failed before its welcome."""
        for connection in self.connections:
            link = self._failures.get(connection.source)
            if link is not None and connection.welcome is None:
                refused = link.state == "auth_failed"
                return Unreachable(connection.target, link.detail or link.state, refused)
        return None

    # --- plans ----------------------------------------------------------------------------

    async def run_plans(self, run: PlanRun) -> JobState:
        """Run a run's plans over its members, showing it every frame while it runs."""
        self._runs.append(run)
        try:
            return await run.run()
        finally:
            self._runs.remove(run)

    # --- closing --------------------------------------------------------------------------

    async def close(self) -> None:
        """Say goodbye to every agent (a local agent exits when its pipe closes), then wait for
        each connection to end. One between attempts has nothing to close and is cancelled at
        once; one already cancelled (a Textual worker at the app's exit) is never cancelled
        twice, so its own clean-up runs to the end."""
        await asyncio.gather(*(connection.stop() for connection in self.connections))
        running = dict(self._running)
        for connection, task in running.items():
            if connection.state != "live" and not task.cancelling():
                task.cancel()
        if running:
            _, pending = await asyncio.wait(running.values(), timeout=STOP_TIMEOUT)
            for task in pending:
                task.cancel()
            await asyncio.wait(running.values())

    async def __aenter__(self) -> ClientSession:
        self.start()
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()
