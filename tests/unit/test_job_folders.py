"""Job folders left by agents no longer running are removed, and nothing else is: not a live
agent's, not a link, not another user's, not a folder from a pid namespace this one cannot see,
not two agents' sweeps tripping over each other. On real folders in a root of the test's own."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dltui.agent import job_folders
from dltui.agent.job_folders import PREFIX, Owner, owner, remove_orphans
from tests.conftest import ROOT

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc")


@pytest.fixture(scope="module")
def gone() -> Owner:
    """A process that has ended (its pid free, or another process's by now)."""
    process = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                               stdin=subprocess.PIPE)  # fmt: skip
    found = owner(process.pid)
    process.communicate()
    assert found is not None and owner(process.pid) != found
    return found


def made(root: Path, who: Owner, letters: str = "abcd1234") -> Path:
    """A job folder of `who`'s, with something inside, as a job leaves it."""
    folder = root / f"{PREFIX}{who.tag}-{letters}"
    (folder / "dltui-ranks-x1y2z3").mkdir(parents=True)
    (folder / "dltui-ranks-x1y2z3" / "store").write_bytes(b"rendezvous")
    return folder


def test_a_new_folder_is_named_for_this_process_as_the_kernel_knows_it():
    me = owner(os.getpid())
    assert me is not None and me.pid == os.getpid()
    assert job_folders.prefix() == f"{PREFIX}{me.tag}-"
    assert owner(os.getpid()) == me  # the same process, read again


def test_a_dead_agents_folder_goes_and_a_live_ones_stays(tmp_path, gone, caplog):
    me = owner(os.getpid())
    assert me is not None
    live = made(tmp_path, me)
    dead = made(tmp_path, gone)
    caplog.set_level("INFO", logger="dltui.agent.job_folders")
    assert remove_orphans(str(tmp_path)) == [dead]
    assert live.exists() and not dead.exists()
    (line,) = caplog.messages
    assert f"removed 1 job folder(s) in {tmp_path} left by agents no longer running" in line
    assert f"(pid {gone.pid})" in line


def test_a_reused_pid_is_not_its_old_owner(tmp_path):
    """This process's pid, with another start time: the agent that had the pid before."""
    me = owner(os.getpid())
    assert me is not None
    before = made(tmp_path, dataclasses.replace(me, started=me.started - 1))
    assert remove_orphans(str(tmp_path)) == [before]


def test_a_folder_from_before_a_reboot_goes_one_from_another_namespace_stays(tmp_path, gone):
    earlier_boot = made(tmp_path, dataclasses.replace(gone, boot="00000000"))
    # A container sharing this /tmp: whatever boot it says, its agent cannot be seen here.
    other_namespace = made(
        tmp_path, dataclasses.replace(gone, boot="00000000", namespace=gone.namespace + 1)
    )
    assert remove_orphans(str(tmp_path)) == [earlier_boot]
    assert other_namespace.exists()


def test_what_is_not_a_dead_agents_own_folder_is_left_alone(tmp_path, gone):
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "inside").mkdir(parents=True)
    (elsewhere / "inside" / "kept").write_text("kept")
    link = tmp_path / f"{PREFIX}{gone.tag}-symlink"
    link.symlink_to(elsewhere, target_is_directory=True)
    a_file = tmp_path / f"{PREFIX}{gone.tag}-afile"
    a_file.write_text("not a folder")
    unowned = tmp_path / f"{PREFIX}abcd1234"  # as agents named theirs before: no owner in it
    unowned.mkdir()
    look_alike = tmp_path / f"{PREFIX}{gone.tag}-BAD"  # not mkdtemp's letters
    look_alike.mkdir()
    dead = made(tmp_path, gone)
    (dead / "link-inside").symlink_to(elsewhere / "inside", target_is_directory=True)
    assert remove_orphans(str(tmp_path)) == [dead]
    assert (elsewhere / "inside" / "kept").read_text() == "kept"  # no link followed
    assert link.is_symlink() and a_file.is_file() and unowned.is_dir() and look_alike.is_dir()


@pytest.mark.skipif(os.geteuid() != 0, reason="making another user's folder needs root")
def test_another_users_folder_is_left_alone(tmp_path, gone):
    theirs = made(tmp_path, gone)
    os.chown(theirs, 65534, 65534)
    assert remove_orphans(str(tmp_path)) == []
    assert theirs.exists()


def test_a_root_that_cannot_be_read_is_a_warning(tmp_path, caplog):
    assert remove_orphans(str(tmp_path / "missing")) == []
    assert "cannot look for job folders left in" in caplog.text


SWEEP = """
import sys
from dltui.agent.job_folders import remove_orphans
sys.stdin.read(1)  # both start together
print(*(path.name for path in remove_orphans(sys.argv[1])), sep="\\n")
"""


def test_two_agents_starting_at_once_remove_each_folder_once(tmp_path, gone):
    dead = {made(tmp_path, gone, f"folder{index:04d}").name for index in range(300)}
    command = [sys.executable, "-c", SWEEP, str(tmp_path)]
    pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    sweeps = [subprocess.Popen(command, cwd=ROOT, text=True, **pipes) for _ in range(2)]
    for sweep in sweeps:
        assert sweep.stdin is not None
        sweep.stdin.write("go")
        sweep.stdin.flush()
    said = [sweep.communicate(timeout=60) for sweep in sweeps]
    assert [sweep.returncode for sweep in sweeps] == [0, 0], said
    assert all("cannot remove" not in err for _, err in said), said
    first, second = ({name for name in out.split()} for out, _ in said)
    assert first.isdisjoint(second) and first | second == dead
    assert list(tmp_path.iterdir()) == []
