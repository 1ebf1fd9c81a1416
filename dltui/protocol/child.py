"""A child process that speaks frames over its pipes: the local agent a client starts (or ssh,
which runs one elsewhere), the benchmark worker an agent starts, and the worker's ranks.

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
from collections.abc import Callable

from dltui.protocol.stream import MessageStream

TAIL_LINES = 20


class ChildStream(MessageStream):
    """Frames over a child's stdout and stdin, and the last lines of its stderr."""

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        what: str,
        relay: Callable[[str], None] | None = None,
    ) -> None:
        """`what` names the child in its death ("the worker", "ssh", "rank 1"); `relay`, where
        given, is told each line of its stderr too (the worker passes its ranks' lines on to
        its own stderr, where the agent keeps them)."""
        assert process.stdout is not None and process.stdin is not None
        super().__init__(process.stdout, process.stdin)
        self.process = process
        self.what = what
        self.relay = relay
        self.stderr_tail: deque[str] = deque(maxlen=TAIL_LINES)
        self._stderr = asyncio.create_task(self._keep_stderr())

    async def _keep_stderr(self) -> None:
        """Read stderr to its end, always: a child blocks on a full pipe nobody reads."""
        assert self.process.stderr is not None
        while True:
            try:
                line = await self.process.stderr.readline()
            except ValueError:  # longer than the stream's limit: the stream dropped it
                line = b"(a line too long to keep)"
            if not line:
                return
            text = line.decode(errors="replace").rstrip()
            self.stderr_tail.append(text)
            if self.relay is not None:
                self.relay(text)

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

    def close_stdin(self) -> None:
        """The end of its stdin: the worker and a rank take it as the sign to stop."""
        if not self.writer.is_closing():
            self.writer.close()

    def send_signal(self, sig: signal.Signals) -> None:
        """Signal the child unless it is known to have ended. Not through asyncio's
        `Process.send_signal`: Popen polls the child first, and that poll can reap it before the
        loop's child watcher does, which then reports the exit code as 255, not the signal."""
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.process.pid, sig)

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
    own_session: bool = True,
    relay: Callable[[str], None] | None = None,
) -> ChildStream:
    """Start a child, as a `kind` of ChildStream, its three standard streams piped; OSError if
    it cannot start. In a session of its own (a terminal's Ctrl-C reaches its parent, which
    ends it in order, not mid-frame), unless `own_session` is False: a worker's ranks stay in
    its process group, which the agent kills whole."""
    process = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        limit=limit,
        start_new_session=own_session,
    )
    return kind(process, what, relay)


def died(what: str, returncode: int | None) -> str:
    """`what` ended: killed by a signal, by name (SIGKILL: out of host memory?), or its code."""
    if returncode is not None and returncode < 0:
        name = signal.Signals(-returncode).name
        hint = " (out of host memory?)" if name == "SIGKILL" else ""
        return f"{what} was killed by {name}{hint}"
    return f"{what} exited with code {returncode}"
