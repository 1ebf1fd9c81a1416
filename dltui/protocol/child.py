"""A child process that speaks frames over its pipes: the local agent a client starts (or ssh,
which runs one elsewhere) and the benchmark worker an agent starts.

One place keeps what such a child last said on stderr and says why it died, so a client and
an agent tell a person the same words: a signal by name (SIGKILL, as the OOM killer sends it,
with that guess), else the exit code, then its last line.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections import deque

from dltui.protocol.stream import MessageStream

TAIL_LINES = 20


class ChildStream(MessageStream):
    """Frames over a child's stdout and stdin, and the last lines of its stderr."""

    def __init__(self, process: asyncio.subprocess.Process, what: str) -> None:
        """`what` names the child in its death ("the worker", "ssh")."""
        assert process.stdout is not None and process.stdin is not None
        super().__init__(process.stdout, process.stdin)
        self.process = process
        self.what = what
        self.stderr_tail: deque[str] = deque(maxlen=TAIL_LINES)
        self._stderr = asyncio.create_task(self._keep_stderr())

    async def _keep_stderr(self) -> None:
        assert self.process.stderr is not None
        while line := await self.process.stderr.readline():
            self.stderr_tail.append(line.decode(errors="replace").rstrip())

    def last_said(self) -> str:
        """The last line it wrote to stderr that says something, or ''."""
        return next((line for line in reversed(self.stderr_tail) if line.strip()), "")

    def death(self) -> str:
        """Why it ended, in words, with the last thing it said."""
        said = self.last_said()
        return (
            f"{died(self.what, self.process.returncode)}: {said}"
            if said
            else died(self.what, self.process.returncode)
        )

    async def said_all(self) -> None:
        """Wait until its stderr is read to the end (it closes as the process exits)."""
        await self._stderr

    def kill_group(self) -> None:
        """SIGKILL the child and whatever it started in its session (its process group)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)

    def forget_stderr(self) -> None:
        self._stderr.cancel()


async def spawn(
    command: list[str] | tuple[str, ...],
    what: str,
    env: dict[str, str] | None = None,
    limit: int = 2**16,
    kind: type[ChildStream] = ChildStream,
) -> ChildStream:
    """Start a child, as a `kind` of ChildStream, in a session of its own (a terminal's Ctrl-C
    reaches its parent, which ends it in order, not mid-frame), its three standard streams
    piped; OSError if it cannot start."""
    process = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        limit=limit,
        start_new_session=True,
    )
    return kind(process, what)


def died(what: str, returncode: int | None) -> str:
    """`what` ended: killed by a signal, by name (SIGKILL: out of host memory?), or its code."""
    if returncode is not None and returncode < 0:
        name = signal.Signals(-returncode).name
        hint = " (out of host memory?)" if name == "SIGKILL" else ""
        return f"{what} was killed by {name}{hint}"
    return f"{what} exited with code {returncode}"
