"""`dltui bench …`: run a plan on an agent (a local one by default) and print as results come.

The same path the TUI uses: the plan goes to an agent as a `run` frame, the agent's worker
runs it, and results come back as frames, so a local run and a remote one differ only in the
address. Ctrl-C cancels the job and waits for the agent to confirm.
"""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import sys
from pathlib import Path
from typing import TextIO

from dltui.bench.plan import PlanError, check_plan
from dltui.bench.table import HEADER, format_row
from dltui.client.connection import handshake, new_job_id
from dltui.client.target import Target
from dltui.client.transport import failure_reason, open_transport
from dltui.protocol.errors import AuthError, ProtocolError
from dltui.protocol.messages import (
    Bye,
    Cancel,
    JobEnd,
    JobProgress,
    JobResult,
    KernelPlan,
    KernelResult,
    Run,
    Welcome,
    to_plain,
)

EXIT_CODES = {"done": 0, "failed": 1, "refused": 2, "cancelled": 130}


class ProgressBar:
    """One line on stderr, redrawn in place; silent when stderr is not a terminal."""

    def __init__(self, out: TextIO = sys.stderr, width: int = 30) -> None:
        self.out, self.width = out, width
        self.live = out.isatty()

    def show(self, done: int, total: int, label: str) -> None:
        if not self.live or total <= 0:
            return
        filled = round(self.width * done / total)
        bar = "█" * filled + "·" * (self.width - filled)
        self.out.write(f"\r\x1b[2K{bar} {done}/{total} {label[:60]}")
        self.out.flush()

    def clear(self) -> None:
        if self.live:
            self.out.write("\r\x1b[2K")
            self.out.flush()


async def run_job(
    target: Target, plan: KernelPlan, secret: bytes | None, json_out: Path | None
) -> int:
    transport = await open_transport(target)
    stream = transport.stream
    job = new_job_id()
    results: list[KernelResult] = []
    bar = ProgressBar()
    loop = asyncio.get_running_loop()
    cancel_requested = asyncio.Event()
    loop.add_signal_handler(signal.SIGINT, cancel_requested.set)
    try:
        welcome: Welcome = await handshake(stream, secret, socket.gethostname())
        inventory = welcome.inventory
        gpus = f"{len(inventory.gpus)}× {inventory.gpus[0].name}" if inventory.gpus else "no GPU"
        print(f"# {inventory.hostname}: {gpus}; {plan.framework}, set {plan.shape_set}")
        await stream.send(Run(1, job, plan))
        print(HEADER)
        receiving = asyncio.ensure_future(stream.receive())
        cancelling: asyncio.Future[bool] | None = asyncio.ensure_future(cancel_requested.wait())
        while True:
            waiting = {receiving} if cancelling is None else {receiving, cancelling}
            done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            if cancelling in done:
                bar.clear()
                print("# cancelling …", file=sys.stderr)
                await stream.send(Cancel(2, job))
                cancelling = None
            if receiving not in done:
                continue
            message = receiving.result()
            if isinstance(message, JobEnd) and message.job == job:
                bar.clear()
                if cancelling is not None:
                    cancelling.cancel()
                break
            receiving = asyncio.ensure_future(stream.receive())
            if isinstance(message, JobProgress) and message.job == job:
                bar.show(message.done, message.total, message.label)
            elif isinstance(message, JobResult) and message.job == job:
                bar.clear()
                results.append(message.result)
                print(format_row(message.result), flush=True)
        if message.error:
            print(f"# job {message.state}: {message.error}", file=sys.stderr)
        if json_out is not None:
            report = {
                "agent": welcome.agent_id,
                "inventory": to_plain(inventory),
                "plan": to_plain(plan),
                "state": message.state,
                "error": message.error,
                "results": [to_plain(result) for result in results],
            }
            json_out.write_text(json.dumps(report, indent=2) + "\n")
        await stream.send(Bye("done", 3))
        return EXIT_CODES[message.state]
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        await transport.close()


def run(target: Target, plan: KernelPlan, secret: bytes | None, json_out: Path | None) -> int:
    try:
        check_plan(plan)
    except PlanError as exc:
        print(f"dltui bench: {exc}", file=sys.stderr)
        return 2
    try:
        return asyncio.run(run_job(target, plan, secret, json_out))
    except AuthError as exc:
        print(f"dltui bench: {target.label} refused the connection: {exc}", file=sys.stderr)
        return 3
    except (OSError, EOFError, ProtocolError) as exc:
        print(f"dltui bench: lost {target.label}: {failure_reason(exc)}", file=sys.stderr)
        return 2
