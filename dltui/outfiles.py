"""Writing the files a user names (exports, reports, plots): beside the target, then renamed.

A file is written under a temporary name in the target's own folder and renamed over the
target only once it is whole, so an interrupted run (an error, ^C, a full disk) leaves the old
file or none, never half of one; and a symbolic link planted at the target is replaced by the
rename, never followed to overwrite what it points at. Recordings are not written this way:
they must be readable while they grow (recording/writer.py creates them, exclusively).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from types import TracebackType

from dltui.errors import DltuiError


class Replacement:
    """A file for `target`, written at `path` (beside it) until `commit` renames it into place;
    `discard` (or leaving the `with` block with an error) removes it."""

    def __init__(self, target: Path) -> None:
        self.target = target
        # The same suffix, so that writers that go by it (matplotlib) still can.
        fd, name = tempfile.mkstemp(prefix=f".{target.stem}.", suffix=target.suffix,
                                    dir=target.parent)  # fmt: skip
        os.close(fd)
        self.path = Path(name)
        self._done = False

    def commit(self) -> None:
        """Make the written file the target: made durable first, then renamed over it."""
        if self._done:
            return
        try:
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            os.chmod(self.path, 0o666 & ~_umask())  # as a file created in place would be
            os.replace(self.path, self.target)
        except OSError:
            self.discard()  # e.g. a folder at the target: no copy is left beside it
            raise
        self._done = True

    def discard(self) -> None:
        if not self._done:
            self.path.unlink(missing_ok=True)
            self._done = True

    def __enter__(self) -> Replacement:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if kind is None:
            self.commit()
        else:
            self.discard()


class WriteFailed(DltuiError):
    """The file system refused a file dltui was writing; the target is as it was."""

    kind = "write"


def write_text(target: Path, text: str) -> None:
    """`target` holds `text`, whole, or is as it was (and WriteFailed says why)."""
    try:
        with Replacement(target) as replacement:
            replacement.path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise WriteFailed(f"cannot write {target}: {exc.strerror or exc}") from None


def unwritable(target: Path, folder: bool = False) -> str | None:
    """Why no file (with `folder`: no folder of files, made as needed) can be written at
    `target`, asked before the work that would fill it; None where it can be tried."""
    if folder:
        return f"{target} is not a folder" if target.exists() and not target.is_dir() else None
    if target.is_dir():
        return f"{target} is a folder"
    if target.exists() and not target.is_file():  # a device, a pipe: never renamed over
        return f"{target} is not a regular file"
    if not target.parent.is_dir():
        return f"{target.parent} is not a folder"
    return None


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
