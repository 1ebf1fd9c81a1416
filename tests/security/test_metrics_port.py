"""The agent's /metrics port is guarded as its own: loopback unless told otherwise; beyond it only
with TLS (certificates made at test time) or an explicit --metrics-insecure; mutual TLS lets in
only scrapers with a certificate; silent connections neither stall scrapes nor pile up."""

from __future__ import annotations

import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from dltui.agent.metrics_budget import PER_ADDRESS
from tests.agents import metrics_url
from tests.conftest import ROOT, dltui_command, wait_for
from tests.security.hostile import closed_by_server
from tests.security.pki import Authority

pytest.importorskip("cryptography")


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    directory = tmp_path_factory.mktemp("pki")
    ca, rogue = Authority(directory, "metrics-test"), Authority(directory, "rogue")
    return {
        "ca": ca.cert,
        "agent": ca.issue("agent", ("127.0.0.1", "localhost")),
        "prometheus": ca.issue("prometheus", client=True),
        "rogue client": rogue.issue("rogue-client", client=True),
    }


def fetch(url: str, context: ssl.SSLContext | None = None) -> str:
    with urllib.request.urlopen(url, timeout=5, context=context) as answer:
        return str(answer.read().decode())


def trusting(pki, client: str | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(pki["ca"]))
    if client is not None:
        context.load_cert_chain(pki[client].cert, pki[client].key)
    return context


def tls_metrics(pki, *extra: str, listen: str = "127.0.0.1:0") -> list[str]:
    agent = pki["agent"]
    return ["--metrics", listen, "--metrics-tls-cert", str(agent.cert),
            "--metrics-tls-key", str(agent.key), *extra]  # fmt: skip


def test_metrics_over_tls_and_the_refusals(agent_factory, pki):
    agent = agent_factory(*tls_metrics(pki))
    url = metrics_url(agent)
    assert url.startswith("https://127.0.0.1:")
    assert "dltui_host_memory_total_bytes" in fetch(url, trusting(pki))
    with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
        fetch(url, ssl.create_default_context())  # the system's CAs never signed it
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        fetch(url.replace("https://", "http://"))  # plain HTTP to a TLS port


def test_mutual_tls_lets_in_only_scrapers_with_a_certificate(agent_factory, pki):
    agent = agent_factory(*tls_metrics(pki, "--metrics-tls-client-ca", str(pki["ca"])))
    url = metrics_url(agent)
    assert "dltui_agent_info" in fetch(url, trusting(pki, "prometheus"))
    for refused in (trusting(pki), trusting(pki, "rogue client")):
        with pytest.raises((urllib.error.URLError, ConnectionError, ssl.SSLError)):
            fetch(url, refused)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(dltui_command(*args), capture_output=True, text=True, cwd=ROOT,
                          timeout=60)  # fmt: skip


def test_beyond_loopback_only_with_tls_or_on_purpose(agent_factory, pki):
    refused = run("agent", "--listen", "127.0.0.1:0", "--metrics", "0.0.0.0:0")
    assert refused.returncode == 2
    assert "not loopback" in refused.stderr and "--metrics-insecure" in refused.stderr
    insecure = agent_factory("--metrics", "0.0.0.0:0", "--metrics-insecure")
    assert "http://0.0.0.0:" in metrics_url(insecure)
    secure = agent_factory(*tls_metrics(pki, listen="0.0.0.0:0"))
    url = metrics_url(secure).replace("0.0.0.0", "127.0.0.1")
    assert "dltui_agent_info" in fetch(url, trusting(pki))


def test_options_that_go_together(tmp_path, pki):
    result = run("agent", "--listen", "127.0.0.1:0", "--metrics-insecure")
    assert result.returncode == 2 and "need --metrics HOST:PORT" in result.stderr
    result = run("agent", "--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0",
                 "--metrics-tls-cert", str(pki["agent"].cert))  # fmt: skip
    assert result.returncode == 2 and "go together" in result.stderr
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate")
    result = run("agent", "--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0",
                 "--metrics-tls-cert", str(junk), "--metrics-tls-key", str(junk))  # fmt: skip
    assert result.returncode == 2 and "cannot use the metrics TLS files" in result.stderr
    taken = socket.create_server(("127.0.0.1", 0))
    port = taken.getsockname()[1]
    result = run("agent", "--listen", "127.0.0.1:0", "--metrics", f"127.0.0.1:{port}")
    taken.close()
    assert result.returncode == 2 and f"cannot serve metrics on 127.0.0.1:{port}" in result.stderr


@pytest.mark.parametrize("tls", [False, True], ids=["http", "https"])
def test_silent_connections_neither_stall_scrapes_nor_pile_up(agent_factory, pki, tls):
    agent = agent_factory(*(tls_metrics(pki) if tls else ["--metrics", "127.0.0.1:0"]))
    url = metrics_url(agent)
    context = trusting(pki) if tls else None
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    # From one address: each newcomer past its share pushes out the oldest silent one.
    silent = [socket.create_connection(("127.0.0.1", port)) for _ in range(4 * PER_ADDRESS)]
    try:
        wait_for(lambda: sum(map(closed_by_server, silent)) == len(silent) - PER_ADDRESS,
                 what="all but the address's share pushed out")  # fmt: skip
        assert not any(map(closed_by_server, silent[-PER_ADDRESS:]))  # the newest kept
        began = time.monotonic()
        assert "dltui_agent_info" in fetch(url, context)  # from that address too
        assert time.monotonic() - began < 2.0
    finally:
        for connection in silent:
            connection.close()
