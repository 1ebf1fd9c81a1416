"""Job folders: each named for the agent that owns it, so that an agent, as it starts, can
remove the ones agents no longer running left behind.

An agent removes a job's folder when the job ends; one killed by SIGKILL, the OOM killer or a
power cut cannot, and a server left running for weeks would gather one for each crash. So the name
says whose a folder is: the agent's pid, the start time the kernel gave that process (a later
process with the same pid has another), the boot and the pid namespace it ran in. A folder is
removed only where all of these say its agent is gone: never a live agent's, never one from a
namespace whose pids this one cannot see, never anything but this user's own folders (a
symbolic link is not a folder). Linux only: without /proc an owner cannot be known, and the
folders made there carry none, so none is ever removed.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

PREFIX = "dltui-job-"
_NAME = re.compile(rf"{PREFIX}(\d+)-(\d+)-([0-9a-f]{{8}})-(\d+)-[a-z0-9_]+")
"""The agent's pid, start time, boot, pid namespace, then mkdtemp's random letters."""


@dataclass(frozen=True, slots=True)
class Owner:
    """A process as the kernel knows it, once and never again."""

    pid: int
    started: int
    """Clock ticks after boot (/proc/PID/stat's starttime): the same pid, reused, differs."""
    boot: str
    """The first 8 hex digits of the kernel's boot id: a pid and start time recur across boots."""
    namespace: int
    """The pid namespace's inode: another namespace's pids mean other processes."""

    @property
    def tag(self) -> str:
        return f"{self.pid}-{self.started}-{self.boot}-{self.namespace}"


def owner(pid: int) -> Owner | None:
    """Process `pid` of this boot and pid namespace, or None where it has ended (a zombie has:
    it only waits to be reaped) or there is no /proc."""
    try:
        proc_stat = Path(f"/proc/{pid}/stat").read_bytes()
        boot = Path("/proc/sys/kernel/random/boot_id").read_text()[:8]
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return None
    fields = proc_stat.rpartition(b")")[2].split()  # after the name, which may hold spaces
    if fields[0] in (b"Z", b"X"):
        return None
    return Owner(pid, int(fields[19]), boot, namespace)


def prefix() -> str:
    """The start of a new job folder's name: this agent's, where it can say who it is."""
    me = owner(os.getpid())
    return f"{PREFIX}{me.tag}-" if me is not None else PREFIX


def _ended(found: Owner, here: Owner) -> bool:
    """Whether the agent `found` has certainly ended, as this one (`here`) can tell."""
    if found.namespace != here.namespace:
        return False  # its pids are not the ones this agent sees: it cannot tell
    if found.boot != here.boot:
        return True  # nothing outlives a reboot
    return owner(found.pid) != found


def remove_orphans(root: str | None = None) -> list[Path]:
    """Remove the job folders in `root` (the temporary folder: TMPDIR's, as tempfile finds it)
    of agents no longer running, and say so in one line; the folders removed. Safe beside
    another agent doing the same: a folder it removed first is skipped, not an error."""
    root = root or tempfile.gettempdir()
    if (here := owner(os.getpid())) is None:
        return []
    try:
        entries = list(os.scandir(root))
    except OSError as exc:
        log.warning("cannot look for job folders left in %s: %s", root, exc)
        return []
    removed: list[Path] = []
    pids: set[int] = set()
    for entry in entries:
        if (match := _NAME.fullmatch(entry.name)) is None:
            continue
        pid, started, boot, namespace = match.groups()
        if not _ended(Owner(int(pid), int(started), boot, int(namespace)), here):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
                continue
            # Linux's rmtree works through descriptors: a link inside is removed, not followed.
            shutil.rmtree(entry.path)
        except FileNotFoundError:  # another agent, starting too, removed it first
            continue
        except OSError as exc:
            log.warning("cannot remove %s, left by an agent no longer running: %s", entry.path, exc)
            continue
        removed.append(Path(entry.path))
        pids.add(int(pid))
    if removed:
        log.info("removed %d job folder(s) in %s left by agents no longer running (pid %s)",
                 len(removed), root, ", ".join(map(str, sorted(pids))))  # fmt: skip
    return removed
