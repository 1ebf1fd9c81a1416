"""Shared test helpers: real agent processes on loopback, and waiting for conditions."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import inspect
import itertools
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest

from tests.fakes import NVML_SHIM

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
"""The real recordings and plans the tests read."""

# OpenMP threads that spin while they wait hold a core that another process needs: with the
# suite's workers, agents and rank processes sharing two cores, a CPU training run went 10×
# slower. Set here, before any test imports torch, and inherited by every process a test starts.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

SLOW = pytest.mark.timeout(360)
"""For tests that train models or start TensorFlow in several processes: with other workers on
the same cores they take minutes, where the suite's 120 s would call a slow run a hang."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """SLOW tests first: handed out as the run begins, they end beside the short ones instead
    of one worker starting a minute of TensorFlow as the others finish."""
    items.sort(key=lambda item: item.get_closest_marker("timeout") is None)


IN_TENSORFLOW = pytest.mark.xdist_group("tensorflow")
"""The tests that import TensorFlow into this process run on one worker (`make test` hands
tests out with --dist loadgroup): each worker that imports it pays ~5 s of CPU and ~500 MB."""


def require(*packages: str) -> None:
    """Skip (the test, or the module where called at its top) unless these packages are
    installed, without importing them: `pytest.importorskip("tensorflow")` costs the worker ~6 s
    of CPU and ~400 MB for a test whose TensorFlow runs in rank processes, and torch imported by
    a module's top was imported by every worker as it collected."""
    missing = [name for name in packages if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)}", allow_module_level=True)


def wait_for(condition: Callable[[], object], timeout: float = 10.0, what: str = "") -> object:
    """Poll until `condition()` is truthy; fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what or condition}")
        time.sleep(0.01)  # ok: the polling interval of a wait for a condition


async def wait_until(
    condition: Callable[[], object], timeout: float = 15.0, what: str = "", interval: float = 0.02
) -> object:
    """`wait_for` inside a test's event loop: poll `condition()` (awaited when it returns an
    awaitable) until it is truthy, letting the loop run between tries; fail after `timeout`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        result = condition()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return result
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what or condition}")
        await asyncio.sleep(interval)  # ok: the polling interval of a wait for a condition


def free_port() -> int:
    """A loopback port nothing listens on as the test asks (the kernel's next free one)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


_SLOTS = itertools.count()


def rendezvous_port(count: int = 1) -> int:
    """The first of `count` consecutive loopback ports free now, for ranks that bind them seconds
    later (TensorFlow's workers use base+i). They come from below the kernel's ephemeral range
    (32768 on) and from a block of this xdist worker's own: a port found by binding port 0 can be
    the kernel's next pick for another test's agent or connection before the ranks bind it (in
    one full suite run a TensorFlow all-reduce across two agents took 134 s and its results came
    from the wrong server)."""
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))
    for slot in itertools.islice(_SLOTS, 125):
        base = 20_000 + 1_000 * worker + 8 * (slot % 125)
        with contextlib.ExitStack() as probes:
            try:
                for port in range(base, base + count):
                    probes.enter_context(socket.socket()).bind(("127.0.0.1", port))
            except OSError:  # in use, or still in TIME_WAIT from an earlier run
                continue
        return base
    raise RuntimeError("no free rendezvous ports in this worker's block")


@dataclass
class AgentProcess:
    process: subprocess.Popen[bytes]
    log: list[str] = field(default_factory=list)
    port: int | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        return self.process.wait(timeout=10)

    def kill(self) -> None:
        """Kill the agent and everything it started: a benchmark rank stuck in a collective
        never reads the end of its stdin, and would outlive a test that failed around it."""
        tree = self._descendants()
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        _kill_all(tree)

    def close(self, grace: float = 10.0) -> None:
        """End the agent and what it runs. One running a job (it has a worker) is asked first,
        as a service manager asks (SIGTERM): it cancels the job and removes the job's folder,
        which a killed agent leaves behind. What is left after `grace` seconds is killed. An
        idle one is killed at once: one whose NVML hangs takes seconds to stop."""
        tree = self._descendants()  # taken first: once the agent is gone, they have no parent
        if tree and self.process.poll() is None:
            self.process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=grace)
        self.kill()  # the agent, where SIGTERM did not end it
        _kill_all(tree)

    def _descendants(self) -> list[psutil.Process]:
        try:
            return psutil.Process(self.process.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []


def _kill_all(processes: list[psutil.Process]) -> None:
    for process in processes:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()


def dltui_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "dltui", *args]


def start_agent(*args: str, listen: str = "127.0.0.1:0", wait: bool = True) -> AgentProcess:
    """Start `dltui agent --listen` and, with `wait`, return once it is listening."""
    env = os.environ | {"PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        dltui_command("agent", "--listen", listen, *args),
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        cwd=ROOT,
        env=env,
    )
    agent = AgentProcess(process)
    ready = threading.Event()

    def drain() -> None:  # keep reading stderr so the agent never blocks on a full pipe
        assert process.stderr is not None
        for raw in process.stderr:
            line = raw.decode(errors="replace").rstrip()
            agent.log.append(line)
            match = re.search(r"listening on \S+:(\d+)", line)
            if match:
                agent.port = int(match.group(1))
                ready.set()
        ready.set()

    threading.Thread(target=drain, daemon=True).start()
    if wait:
        started = ready.wait(20)
        if not (started and agent.port is not None):
            process.kill()  # never left running behind a failed test
            process.wait()
        assert started, "agent did not start"
        assert agent.port is not None, "agent exited: " + "\n".join(agent.log)
    return agent


@pytest.fixture
def agent_factory() -> Iterator[Callable[..., AgentProcess]]:
    started: list[AgentProcess] = []

    def factory(*args: str, **kwargs) -> AgentProcess:
        agent = start_agent(*args, **kwargs)
        started.append(agent)
        return agent

    yield factory
    for agent in started:
        agent.close()


@pytest.fixture
def secret_file(tmp_path: Path) -> Path:
    path = tmp_path / "secret"
    path.write_text("a-test-secret-of-enough-length\n")
    path.chmod(0o600)
    return path


@pytest.fixture
def fake_nvml(monkeypatch, tmp_path):
    """Agents started after this import the fake NVML (tests/fakes) with the spec given; returns the
    control file a test appends commands to."""
    monkeypatch.setenv("PYTHONPATH", f"{NVML_SHIM}:{ROOT}")
    control = tmp_path / "control.jsonl"
    control.touch()

    def setup(spec: dict) -> Path:
        monkeypatch.setenv("DLTUI_FAKE_NVML", json.dumps(spec | {"control": str(control)}))
        return control

    return setup


@pytest.fixture
def fake_gpus(fake_nvml) -> Callable[[list[dict]], None]:
    """Agents started after this see the fake NVML with these GPUs."""
    return lambda gpus: fake_nvml({"gpus": gpus})
