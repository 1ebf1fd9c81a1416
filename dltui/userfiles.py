"""Reading the files a user names (plans, agent configs, secrets, certificates, recordings) as
the untrusted input they may be: a regular file only, its size checked before a byte is read,
and every problem one line that names the file, never a traceback or a bad value quoted whole.

A file is opened without blocking and looked at with fstat before anything is read, so a named
pipe is refused at once instead of hanging, and /dev/zero instead of filling memory.
"""

from __future__ import annotations

import os
import stat
import tomllib
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, BinaryIO

from dltui.protocol.errors import quote

if TYPE_CHECKING:  # the agent loads ssl only to serve TLS
    import ssl

MAX_SECRET_FILE = 4096
"""A secret is a line of random bytes; a bigger file is not one (and is never read)."""
PEM_LIMIT = 1 << 20
"""Certificates, keys and CA bundles (a system's whole bundle is about 200 KB)."""
MAX_TOML_DEPTH = 8
"""Tables, arrays and inline tables inside each other; a plan needs three."""
_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


Check = Callable[[os.stat_result], str | None]


class FileProblem(OSError):
    """A file that cannot be used, in one line that names it (an OSError, so that code which
    already says "cannot use this file" for I/O errors says it for these too)."""


class SecretFileError(Exception):
    """The secret file is missing, not a small regular file, too short or readable by others."""


def open_regular(
    path: str | os.PathLike[str], what: str, limit: int, check: Check | None = None
) -> BinaryIO:
    """`path` opened for reading, once fstat has shown a regular file of at most `limit` bytes
    that passes `check` (a secret's mode: a problem in words, or None); FileProblem otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise FileProblem(f"cannot read {what} {name_of(path)}: {exc.strerror}") from None
    except ValueError:  # a NUL in the name: a TOML string may hold one
        raise FileProblem(f"{what} {name_of(path)}: a file name holds no NUL byte") from None
    try:
        status = os.fstat(fd)
        problem = (
            _not_regular(status)
            or (check and check(status))
            or _too_big(status.st_size, what, limit)
        )
        if problem:
            raise FileProblem(f"{what} {name_of(path)}: {problem}")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def read_bounded(
    path: str | os.PathLike[str], what: str, limit: int, check: Check | None = None
) -> bytes:
    """The bytes of a regular file of at most `limit` bytes that passes `check`."""
    with open_regular(path, what, limit, check) as file:
        try:
            data = file.read(limit + 1)
        except OSError as exc:
            raise FileProblem(f"cannot read {what} {name_of(path)}: {exc.strerror}") from None
    if len(data) > limit:  # it grew since fstat
        raise FileProblem(f"{what} {name_of(path)}: {_too_big(len(data), what, limit)}")
    return data


CERTIFICATE = b"CERTIFICATE-----"
"""What a PEM certificate's armour ends with (BEGIN CERTIFICATE, BEGIN TRUSTED CERTIFICATE)."""
PRIVATE_KEY = b"PRIVATE KEY-----"
"""What a PEM private key's ends with (BEGIN PRIVATE KEY, RSA, EC, ENCRYPTED PRIVATE KEY)."""
_PEM_NAMES = {CERTIFICATE: "certificate", PRIVATE_KEY: "private key"}


def check_pem(path: str | os.PathLike[str], what: str, *holds: bytes) -> None:
    """For a PEM file handed to OpenSSL, which reads it itself (a named pipe or /dev/zero
    forever) and names no file in its errors: a regular file of at most PEM_LIMIT bytes that
    holds each of `holds` (CERTIFICATE, PRIVATE_KEY), or FileProblem naming it."""
    data = read_bounded(path, what, PEM_LIMIT)
    for armour in holds:
        if armour not in data:
            raise FileProblem(f"{what} {name_of(path)} holds no PEM {_PEM_NAMES[armour]}")


def load_toml(path: str | os.PathLike[str], what: str, limit: int) -> dict[str, Any]:
    """A TOML file as a dict: UTF-8, at most `limit` bytes and MAX_TOML_DEPTH levels deep."""
    data = read_bounded(path, what, limit)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        byte = data[exc.start]
        raise FileProblem(
            f"{what} {name_of(path)}: not UTF-8 text (byte 0x{byte:02x} at offset {exc.start})"
        ) from None
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        reason = _short_reason(str(exc))
        raise FileProblem(f"{what} {name_of(path)} is not valid TOML: {reason}") from None
    except RecursionError:  # arrays in arrays a few hundred deep: tomllib recurses
        raise FileProblem(
            f"{what} {name_of(path)}: nested deeper than {MAX_TOML_DEPTH} levels"
        ) from None
    if _depth_over(document, MAX_TOML_DEPTH):
        raise FileProblem(f"{what} {name_of(path)}: nested deeper than {MAX_TOML_DEPTH} levels")
    return document


def load_secret(path: str | os.PathLike[str]) -> bytes:
    """Read a secret file: a small regular file that group and others cannot read, checked
    before a byte of it is read."""

    def private(status: os.stat_result) -> str | None:
        if status.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            mode = stat.S_IMODE(status.st_mode)
            return f"is accessible by others (mode {mode:04o}); run: chmod 600 {path}"
        return None

    # Here, not at the top: auth loads hashlib, and the agent decides first where its hashes
    # come from (commands/agent.py).
    from dltui.protocol.auth import MIN_SECRET_SIZE

    try:
        data = read_bounded(path, "secret file", MAX_SECRET_FILE, private).strip()
    except FileProblem as exc:
        raise SecretFileError(str(exc)) from None
    if len(data) < MIN_SECRET_SIZE:
        raise SecretFileError(f"secret in {path} is shorter than {MIN_SECRET_SIZE} bytes")
    return data


def name_of(path: str | os.PathLike[str]) -> str:
    """A file's name for an error line: as given, unless it would break the line or run long."""
    text = os.fsdecode(path)
    return text if text.isprintable() and len(text) <= 256 else quote(text)


def listing(names: Iterable[object], most: int = 6) -> str:
    """Names for an error line: each quoted short, at most `most` of them, then how many more."""
    every = list(names)
    shown = ", ".join(str(name) if _plain(name) else quote(name) for name in every[:most])
    return shown + (f" and {len(every) - most:,} more" if len(every) > most else "")


def _plain(name: object) -> bool:
    return isinstance(name, str) and len(name) <= 40 and name.isprintable()


def _not_regular(status: os.stat_result) -> str | None:
    if stat.S_ISREG(status.st_mode):
        return None
    kind = next((name for test, name in _KINDS if test(status.st_mode)), "not a file")
    return f"is {kind}, not a regular file"


def _too_big(size: int, what: str, limit: int) -> str | None:
    if size <= limit:
        return None
    return f"is {size:,} bytes, more than a {what} may be ({limit:,})"


def _short_reason(reason: str, most: int = 160) -> str:
    """tomllib's reason, which may quote a key whole, cut short; its position kept."""
    if len(reason) <= most:
        return reason
    head, at, position = reason.rpartition(" (at ")
    if not at:
        return reason[:most] + "…"
    return f"{head[:most]}… (at {position}"


def _depth_over(document: dict[str, Any], limit: int) -> bool:
    """Whether tables and arrays nest deeper than `limit` (iterative: a dotted table header of
    thousands of parts nests that deep without any recursion in the parser)."""
    stack: list[tuple[Any, int]] = [(document, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > limit:
            return True
        children = value.values() if isinstance(value, dict) else value
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def load_pair(context: ssl.SSLContext, cert: str, key: str | None) -> None:
    """`context.load_cert_chain`, its failure said of the files (OpenSSL says "key values
    mismatch" of a key that belongs to another certificate, and names neither)."""
    try:
        context.load_cert_chain(cert, key)
    except OSError as exc:  # ssl.SSLError is one
        files = f"certificate {name_of(cert)}" + (f" with key {name_of(key)}" if key else "")
        raise FileProblem(f"{files}: {getattr(exc, 'reason', None) or exc}") from None
