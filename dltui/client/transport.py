"""Opening a byte stream to an agent: TCP, TLS, ssh, or a local agent spawned over stdio.

Library failures (ssl's, ssh's exit codes) become this project's errors here, in one place.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import signal
import socket
import ssl
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from dltui.client.target import SshOptions, Target, TlsOptions
from dltui.client.tls import client_context, describe_tls_error
from dltui.protocol.child import ChildStream, spawn
from dltui.protocol.errors import AuthError
from dltui.protocol.messages import Message
from dltui.protocol.stream import MessageStream

STREAM_LIMIT = 2**20
OPEN_TIMEOUT = 5.0
"""A TCP or TLS connection's limit; spawned agents (local, ssh) are bounded by the handshake's."""
SSH_EXIT_WAIT = 2.0
# ssh's own words for "you may not": shown as a refusal, not as the agent being down.
_SSH_REFUSALS = ("Permission denied", "Host key verification failed", "IDENTIFICATION HAS CHANGED")


class TransportAuthError(AuthError, OSError):
    """The transport refused us: an untrusted certificate, TLS on one side only, ssh's
    authentication. An AuthError for the UI ('auth failed'), and an OSError so that code
    treating every failure to connect alike still catches it."""


def failure_reason(exc: BaseException) -> str:
    """Why a connection failed, in the words a user expects rather than an errno dump."""
    if isinstance(exc, ssl.SSLError):
        return describe_tls_error(exc)
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused (is the agent running?)"
    if isinstance(exc, TimeoutError):
        return str(exc) or "timed out"
    if isinstance(exc, socket.gaierror):
        return f"unknown host ({exc.strerror})"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return str(exc) or type(exc).__name__


@dataclass
class Transport:
    stream: MessageStream
    close: Callable[[], Awaitable[None]]


async def open_transport(target: Target, timeout: float = OPEN_TIMEOUT) -> Transport:
    """Connect; OSError (with the reason) when the agent cannot be reached."""
    if target.kind == "local":
        command = [sys.executable, "-m", "dltui", "agent", "--stdio"]
        return await _spawn(command, "the local agent")
    if target.kind == "ssh":
        return await _spawn(ssh_command(target), "ssh")
    context = None
    if target.kind == "tls":
        context = client_context(target.tls or TlsOptions())
    try:
        # asyncio.timeout, not wait_for: Python 3.11's wait_for drops a cancel that comes as the
        # connection opens, and Ctrl-C then waited out the handshake.
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(
                target.host, target.port, limit=STREAM_LIMIT, ssl=context,
                server_hostname=target.host if context else None,
            )  # fmt: skip
    except ssl.SSLError as exc:
        raise TransportAuthError(describe_tls_error(exc)) from exc
    stream = MessageStream(reader, writer)
    return Transport(stream, stream.close)


def ssh_command(target: Target) -> list[str]:
    """ssh's argv: never a shell on this side. The remote command is one string, because ssh
    hands it to the remote user's shell; each word is quoted so the shell reads it as given,
    but for a leading ~/, which is left for the shell to expand to the remote home."""
    options = target.ssh or SshOptions()
    command = ["ssh", "-T", "-e", "none", "-o", "BatchMode=yes"]
    if options.config is not None:
        command += ["-F", options.config]
    if target.port is not None:
        command += ["-p", str(target.port)]
    if target.user is not None:
        command += ["-l", target.user]
    remote = " ".join(_remote_word(word) for word in [*options.remote_dltui, "agent", "--stdio"])
    return [*command, "--", target.host, remote]


def _remote_word(word: str) -> str:
    if word.startswith("~/"):
        return "~/" + shlex.quote(word[2:])
    return shlex.quote(word)


class _AgentChild(ChildStream):
    """A spawned agent (or ssh running one): at the end of its frames, why it went away, with
    ssh's refusals and a missing remote dltui told apart from an agent that died."""

    async def receive(self) -> Message:
        try:
            return await super().receive()
        except EOFError:
            raise await self._ended() from None

    async def _ended(self) -> Exception:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.process.wait(), SSH_EXIT_WAIT)
        code, said = self.process.returncode, self.last_said()
        if self.what == "ssh" and code == 255:
            if any(words in said for words in _SSH_REFUSALS):
                return TransportAuthError(f"ssh: {said}")
            return ConnectionError(f"ssh: {said or 'failed'}")
        if code == 127:
            return ConnectionError(
                f"dltui was not found on the remote host ({said}); pass --remote-dltui"
            )
        return EOFError(self.death())


async def _spawn(command: list[str], what: str) -> Transport:
    stream = await spawn(command, what, limit=STREAM_LIMIT, kind=_AgentChild)

    async def close() -> None:
        await stream.close()  # the agent (and ssh) exit when stdin closes
        try:
            await asyncio.wait_for(stream.process.wait(), 3.0)
        except TimeoutError:
            stream.send_signal(signal.SIGKILL)
            await stream.process.wait()
        stream.forget_stderr()

    return Transport(stream, close)
