"""`dltui serve` in a real browser: headless Chromium opens the page and the app shows a server.

The page draws the terminal on a canvas (xterm.js), so there is no text in the DOM to read;
the test reads what the page's terminal was sent instead, through the DevTools protocol: a
script added before the page loads keeps every byte its WebSocket receives. It drives
Debian's chromium (`.ci/run` installs it) and downloads nothing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.conftest import ROOT, dltui_command, free_port, wait_until

aiohttp = pytest.importorskip("aiohttp")
pytest.importorskip("textual_serve")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")

FIXTURE = ROOT / "tests" / "fixtures" / "h200x2-kernels.dlrec"
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-B]|\x1b[=>]")

# Keeps the text of every binary frame the page's WebSockets receive, in window.__dltuiText.
KEEP_TERMINAL_BYTES = """
window.__dltuiText = "";
const Native = window.WebSocket;
window.WebSocket = function (...args) {
  const socket = new Native(...args);
  const decoder = new TextDecoder();
  socket.addEventListener("message", (event) => {
    if (typeof event.data !== "string") {
      window.__dltuiText += decoder.decode(new Uint8Array(event.data), {stream: true});
    }
  });
  return socket;
};
window.WebSocket.prototype = Native.prototype;
"""


class DevTools:
    """The few DevTools-protocol calls the test makes, on one page's WebSocket."""

    def __init__(self, socket) -> None:
        self.socket = socket
        self.ids = iter(range(1, 1_000_000))

    async def call(self, method: str, **params) -> dict:
        number = next(self.ids)
        await self.socket.send_json({"id": number, "method": method, "params": params})
        while True:
            reply = json.loads((await self.socket.receive()).data)
            if reply.get("id") == number:
                assert "error" not in reply, reply
                return reply.get("result", {})


@pytest.fixture
def served():
    port = free_port()
    server = subprocess.Popen(
        [*dltui_command("serve", "--port", str(port), "replay", str(FIXTURE))],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    yield f"http://127.0.0.1:{port}/"
    server.terminate()
    server.wait(timeout=10)


@pytest.fixture
def browser(tmp_path: Path):
    port = free_port()
    # Its singleton folder (org.chromium.Chromium.*) outlives it: in a folder of the test's.
    # Not tmp_path itself: under xdist the socket's path there is longer than a socket's may be.
    singleton = Path(tempfile.mkdtemp(prefix="dltui-chromium-"))
    chromium = subprocess.Popen(
        [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
         f"--remote-debugging-port={port}", f"--user-data-dir={tmp_path / 'profile'}",
         "--window-size=1400,900", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env=os.environ | {"TMPDIR": str(singleton)},
    )  # fmt: skip
    yield f"http://127.0.0.1:{port}"
    chromium.terminate()
    chromium.wait(timeout=10)
    shutil.rmtree(singleton, ignore_errors=True)


async def test_the_served_page_shows_a_server_in_headless_chromium(served, browser, tmp_path):
    async with aiohttp.ClientSession() as http:

        async def page_socket() -> str | None:
            try:
                async with http.get(f"{browser}/json/list") as reply:
                    pages = [t for t in await reply.json() if t["type"] == "page"]
            except aiohttp.ClientError:
                return None  # chromium is still starting
            return pages[0]["webSocketDebuggerUrl"] if pages else None

        async def page_up() -> bool:
            try:
                async with http.get(served) as reply:
                    return reply.status == 200
            except aiohttp.ClientError:
                return False

        url = await wait_until(page_socket, 30, "chromium's DevTools", interval=0.2)
        await wait_until(page_up, 30, "dltui serve", interval=0.2)
        async with http.ws_connect(url, max_msg_size=0) as socket_:
            tools = DevTools(socket_)
            await tools.call("Page.enable")
            await tools.call("Page.addScriptToEvaluateOnNewDocument", source=KEEP_TERMINAL_BYTES)
            await tools.call("Page.navigate", url=served)

            async def shown() -> str | None:
                found = await tools.call(
                    "Runtime.evaluate", expression="window.__dltuiText", returnByValue=True
                )
                text = ANSI.sub("", found["result"].get("value") or "")
                words = ("dltui", "NVIDIA H200", "h200x2-kernels", "GPU 0")
                return text if all(word in text for word in words) else None  # drawn in parts

            text = await wait_until(shown, 60, "the app's server column on the page", interval=0.2)
            shot = await tools.call("Page.captureScreenshot")
            (tmp_path / "page.png").write_bytes(__import__("base64").b64decode(shot["data"]))
    assert "dltui" in text and "GPU 0" in text
