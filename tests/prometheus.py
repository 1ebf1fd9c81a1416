"""A real Prometheus server and promtool for tests: Debian's `prometheus` package, which .ci/run
installs when it is missing. Where it cannot be installed, the tests that need it skip."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import free_port, wait_for

SKIP = "needs Prometheus (Debian's prometheus package: .ci/run installs it)"


def tool(name: str) -> str:
    """The path of `prometheus` or `promtool`; the test skips where it is not installed."""
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} not found: {SKIP}")
    return path


def promtool(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([tool("promtool"), *args], capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return json.load(answer)


class PrometheusServer:
    """`prometheus` on a loopback port with a config of the test's, its data in `folder`.

    Prometheus cannot say which port it took when given port 0, so a free one is picked and the
    start is tried again if another process took it meanwhile.
    """

    def __init__(self, folder: Path, scrape_configs: list[dict[str, Any]] | None = None,
                 data: Path | None = None, rule_files: tuple[Path, ...] = ()) -> None:  # fmt: skip
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        config = {"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                  "rule_files": [str(path) for path in rule_files],
                  "scrape_configs": scrape_configs or []}  # fmt: skip
        self.config = folder / "prometheus.yml"
        self.config.write_text(json.dumps(config, indent=1))  # YAML reads JSON
        self.data = data or folder / "data"
        self.process: subprocess.Popen[bytes] | None = None
        for _ in range(3):
            if self._start():
                return
        raise AssertionError("prometheus did not start: " + self.log.read_text()[-2000:])

    def _start(self) -> bool:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = self.folder / "prometheus.log"
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [tool("prometheus"), f"--config.file={self.config}",
                 f"--storage.tsdb.path={self.data}", f"--web.listen-address=127.0.0.1:{self.port}",
                 "--storage.tsdb.retention.time=100y", "--log.level=warn"],
                stdout=log, stderr=subprocess.STDOUT, cwd=self.folder,
            )  # fmt: skip
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False  # the port was taken after all, or a bad config: the log says
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as answer:
                    if answer.status == 200:
                        return True
            except OSError:
                pass
            time.sleep(0.1)  # ok: polling for the server to be ready
        self.stop()
        return False

    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
        """The result vector of an instant query (now, or at `at`)."""
        params = {"query": expr} | ({"time": f"{at:.3f}"} if at is not None else {})
        body = get_json(f"{self.url}/api/v1/query?{urllib.parse.urlencode(params)}")
        assert body["status"] == "success", body
        return list(body["data"]["result"])

    def alerts(self) -> list[dict[str, Any]]:
        """The alerts pending or firing now."""
        body = get_json(f"{self.url}/api/v1/alerts")
        return list(body["data"]["alerts"])

    def wait_for_series(self, expr: str, timeout: float = 30.0) -> list[dict[str, Any]]:
        found = wait_for(lambda: self.query(expr), timeout, what=f"Prometheus to have {expr}")
        assert isinstance(found, list)
        return found

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def values(result: list[dict[str, Any]], label: str) -> dict[str, float]:
    """An instant vector as `label` value -> sample value."""
    return {series["metric"].get(label, ""): float(series["value"][1]) for series in result}
