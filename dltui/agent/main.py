"""`dltui agent`: wire the sampler to the server and run until a signal or hang-up."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Literal

from dltui.agent import footprint, job_folders
from dltui.agent.alerts import Rule
from dltui.agent.listener import requires_client_certificate
from dltui.agent.server import Agent, require_stdio_pipes, run_until_signal, stable_agent_id
from dltui.errors import UsageError
from dltui.telemetry.sampler import OPEN_DEADLINE, Sampler

if TYPE_CHECKING:  # prometheus-client is loaded only when metrics are served, ssl with TLS
    import ssl

    from dltui.agent.metrics_server import MetricsOptions, MetricsServer

log = logging.getLogger(__name__)


def run(
    listen: tuple[str, int] | None,
    rate_hz: float,
    secret: bytes | None,
    tls: ssl.SSLContext | None = None,
    nvml_timeout: float = OPEN_DEADLINE,
    data_dirs: tuple[str, ...] = (),
    rules: list[Rule] | None = None,
    metrics: MetricsOptions | None = None,
    cpu: int | Literal["any"] | None = None,
) -> int:
    """Serve on TCP (TLS with `tls`) at `listen`, or over stdin/stdout when it is None; 0 on a
    clean stop. ConfigFileError when asked to serve unsafely, or over something not a pipe.
    Time-to-accuracy plans may read `data_dirs` and the folders inside them; `rules` are the
    config's alert rules. With `metrics`, serve /metrics there too. The agent's threads keep to
    `cpu` (None: the last CPU it may use; "any": wherever the kernel puts them)."""
    if listen is None:
        require_stdio_pipes()
    footprint.one_arena()
    try:
        kept_to = None if cpu == "any" else footprint.one_cpu(cpu)
    except ValueError as exc:
        raise UsageError(f"--cpu: {exc}") from None
    job_folders.remove_orphans()  # what agents killed before they could clean up left
    # The sampler calls `agent` only after start(), by which time it exists.
    sampler = Sampler(rate_hz, lambda sample: agent.on_sample(sample), open_deadline=nvml_timeout,
                      on_event=lambda event: agent.events.add([event]),
                      job_running=lambda: agent.jobs.current is not None)  # fmt: skip
    where = f"{listen[0]}:{listen[1]}" if listen else "stdio"
    if listen is None and not data_dirs:
        # Over stdio the client is the user who started the agent (a local spawn, or ssh into
        # that user's account): its plans may read any folder that user can.
        data_dirs = ("/",)
    try:
        with _signals_stop_start_up():  # NVML may take seconds a GPU to start, or hang
            inventory = sampler.inventory
    except _StoppedStartingUp:
        log.info("agent stopping on signal")
        return 0
    agent = Agent(inventory, rate_hz, stable_agent_id(where), secret, tls, data_dirs, rules,
                  sampling=sampler.set_rate)  # fmt: skip
    footprint.hand_back_freed()  # NVML has started: the inventory is taken
    sampler.set_rate(agent.demand.rate_hz)  # slowly, until a client or a scraper asks for more

    def ready(port: int) -> None:
        assert listen is not None  # only serve_tcp calls it
        gpus = len(agent.inventory.gpus)
        how = "TCP"
        if tls is not None:
            how = "mutual TLS" if requires_client_certificate(tls) else "TLS"
        on_cpu = "" if kept_to is None else f", on CPU {kept_to}"
        log.info("listening on %s:%d, %d GPU(s), %g Hz, %s%s", listen[0], port, gpus, rate_hz,
                 how, on_cpu)  # fmt: skip

    serve = agent.serve_tcp(*listen, ready) if listen else agent.serve_stdio()
    sampler.start()
    server = None
    try:
        if metrics is not None:
            try:
                server = _serve_metrics(metrics, agent, sampler)
            except OSError as exc:
                where = f"{metrics.host}:{metrics.port}"
                print(f"dltui agent: cannot serve metrics on {where}: {_reason(exc)}",
                      file=sys.stderr)  # fmt: skip
                serve.close()
                return 2
        footprint.name_threads()
        asyncio.run(run_until_signal(_with_metrics(serve, server)))
    except OSError as exc:
        print(f"dltui agent: cannot listen on {where}: {_reason(exc)}", file=sys.stderr)
        return 2
    finally:
        sampler.stop()
    return 0


def _reason(exc: OSError) -> str:
    """The system's words for `exc`, without the address socket.create_server adds to them (the
    line that prints the reason has said it). A name that does not resolve has a negative errno,
    getaddrinfo's own, whose words only strerror holds."""
    if exc.errno is not None and exc.errno > 0:
        return os.strerror(exc.errno)
    return exc.strerror or str(exc)


class _StoppedStartingUp(Exception):
    """SIGINT or SIGTERM arrived while the agent started, before its loop handles them."""


@contextmanager
def _signals_stop_start_up() -> Iterator[None]:
    def stop(signum: int, frame: FrameType | None) -> None:
        raise _StoppedStartingUp

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


async def _with_metrics(serve: Awaitable[None], metrics: MetricsServer | None) -> None:
    """`serve`, with /metrics beside it on the same loop while it runs."""
    if metrics is None:
        return await serve
    answering = asyncio.create_task(metrics.serve())
    try:
        await serve
    finally:
        answering.cancel()


def _serve_metrics(options: MetricsOptions, agent: Agent, sampler: Sampler) -> MetricsServer:
    from dltui.agent.metrics import registry_for
    from dltui.agent.metrics_server import MetricsServer

    server = MetricsServer(options, registry_for(agent, sampler))
    log.info("metrics on %s", server.url)
    return server
