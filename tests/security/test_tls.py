"""TLS between real agents and clients, with certificates made for the test: a trusted agent is
served, every impostor is refused with a reason, and each side tells a plaintext peer why."""

from __future__ import annotations

import asyncio
import subprocess

import pytest

from dltui.client.connection import handshake
from dltui.client.target import TlsOptions, parse_target
from dltui.client.transport import TransportAuthError, open_transport
from dltui.protocol.errors import AuthError
from dltui.protocol.messages import Sample, Subscribe, Welcome
from tests.conftest import ROOT, dltui_command
from tests.security.pki import Authority, self_signed

pytest.importorskip("cryptography")


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    directory = tmp_path_factory.mktemp("pki")
    ca, rogue = Authority(directory, "dltui-test"), Authority(directory, "rogue")
    return {
        "ca": ca.cert,
        "agent": ca.issue("agent", ("127.0.0.1", "localhost")),
        "elsewhere": ca.issue("elsewhere", ("other.example",)),
        "client": ca.issue("client", client=True),
        "rogue agent": rogue.issue("rogue-agent", ("127.0.0.1",)),
        "rogue client": rogue.issue("rogue-client", client=True),
        "self-signed": self_signed(directory, "self-signed", ("127.0.0.1",)),
    }


def tls_agent(agent_factory, issued, *extra: str, listen: str = "127.0.0.1:0", wait=True):
    return agent_factory(
        "--tls-cert", str(issued.cert), "--tls-key", str(issued.key), *extra,
        listen=listen, wait=wait,
    )  # fmt: skip


async def reach(address: str, options: TlsOptions | None) -> tuple[Welcome, str | None]:
    """Handshake with an agent; the welcome and the TLS version the connection used."""
    target = parse_target(address).reached_with(options, None)
    transport = await open_transport(target)
    try:
        welcome = await handshake(transport.stream, None, "test")
        ssl_object = transport.stream.writer.get_extra_info("ssl_object")
        await transport.stream.send(Subscribe(1, 10.0))
        while not isinstance(await transport.stream.receive(), Sample):
            pass
        return welcome, ssl_object.version() if ssl_object else None
    finally:
        await transport.close()


async def test_an_agent_whose_ca_is_trusted_is_served_over_tls(agent_factory, pki):
    agent = tls_agent(agent_factory, pki["agent"])
    welcome, version = await reach(f"tls://{agent.address}", TlsOptions(ca=str(pki["ca"])))
    assert welcome.inventory.hostname and version in ("TLSv1.2", "TLSv1.3")
    # A bare HOST:PORT uses TLS as soon as a TLS option is given; by name, too.
    _, version = await reach(agent.address, TlsOptions(ca=str(pki["ca"])))
    assert version is not None
    _, version = await reach(f"tls://localhost:{agent.port}", TlsOptions(ca=str(pki["ca"])))
    assert version is not None


@pytest.mark.parametrize(
    ("certificate", "words"),
    [
        ("self-signed", "not trusted (self-signed certificate)"),
        ("rogue agent", "not trusted (unable to get local issuer certificate)"),
        ("elsewhere", "certificate is for another name"),
    ],
)
async def test_an_untrusted_agent_certificate_is_refused(agent_factory, pki, certificate, words):
    agent = tls_agent(agent_factory, pki[certificate])
    with pytest.raises(TransportAuthError, match=words.replace("(", r"\(").replace(")", r"\)")):
        await reach(f"tls://{agent.address}", TlsOptions(ca=str(pki["ca"])))
    # Without --tls-ca the system's roots are used, and they do not know our test CA either.
    with pytest.raises(TransportAuthError, match="not trusted"):
        await reach(f"tls://{agent.address}", None)


async def test_plaintext_and_tls_each_tell_the_other_what_is_wrong(agent_factory, pki):
    tls = tls_agent(agent_factory, pki["agent"])
    loop = asyncio.get_running_loop()
    began = loop.time()
    with pytest.raises(AuthError, match="this agent requires TLS: connect with tls://"):
        await reach(tls.address, None)
    assert loop.time() - began < 8  # told, not left to time out
    plain = agent_factory()
    with pytest.raises(TransportAuthError, match="the agent does not speak TLS"):
        await reach(f"tls://{plain.address}", TlsOptions(ca=str(pki["ca"])))
    # Both agents go on serving the clients that speak their language.
    assert (await reach(tls.address, TlsOptions(ca=str(pki["ca"]))))[1] is not None
    assert (await reach(plain.address, None))[1] is None


async def test_mutual_tls_requires_a_client_certificate_from_its_ca(agent_factory, pki):
    agent = tls_agent(agent_factory, pki["agent"], "--tls-client-ca", str(pki["ca"]))
    ca = str(pki["ca"])
    with pytest.raises(TransportAuthError, match="requires a client certificate, pass --tls-cert"):
        await reach(agent.address, TlsOptions(ca=ca))
    rogue = pki["rogue client"]
    with pytest.raises(TransportAuthError, match="signed by a CA it trusts"):
        await reach(agent.address, TlsOptions(ca, str(rogue.cert), str(rogue.key)))
    client = pki["client"]
    welcome, version = await reach(agent.address, TlsOptions(ca, str(client.cert), str(client.key)))
    assert welcome.inventory.hostname and version is not None
    assert any("TLS handshake with" in line for line in agent.log)


def test_beyond_loopback_mutual_tls_is_enough_and_plain_tls_is_not(agent_factory, pki):
    mutual = tls_agent(agent_factory, pki["agent"], "--tls-client-ca", str(pki["ca"]),
                       listen="0.0.0.0:0")  # fmt: skip
    assert mutual.port and any("Hz, mutual TLS" in line for line in mutual.log)
    plain_tls = tls_agent(agent_factory, pki["agent"], listen="0.0.0.0:0", wait=False)
    assert plain_tls.process.wait(timeout=20) == 2
    assert any("not loopback" in line and "--tls-client-ca" in line for line in plain_tls.log)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(dltui_command(*args), capture_output=True, text=True, cwd=ROOT,
                          timeout=60)  # fmt: skip


def test_probe_over_tls_and_its_refusals(agent_factory, pki):
    agent = tls_agent(agent_factory, pki["agent"])
    result = run("probe", f"tls://{agent.address}", "--tls-ca", str(pki["ca"]))
    assert result.returncode == 0, result.stderr
    result = run("probe", agent.address)
    assert result.returncode == 3 and "requires TLS" in result.stderr
    impostor = tls_agent(agent_factory, pki["self-signed"])
    result = run("probe", impostor.address, "--tls-ca", str(pki["ca"]))
    assert result.returncode == 3 and "self-signed certificate" in result.stderr


def test_unusable_tls_options_are_usage_errors(pki, tmp_path):
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate")
    result = run("probe", "127.0.0.1:1", "--tls-ca", str(junk))
    assert result.returncode == 2
    assert f"cannot use the TLS files: CA {junk} holds no PEM certificate" in result.stderr
    result = run("probe", "127.0.0.1:1", "--tls-cert", str(pki["client"].cert))
    assert result.returncode == 2 and "--tls-cert and --tls-key go together" in result.stderr
    result = run("agent", "--listen", "127.0.0.1:0", "--tls-cert", str(junk), "--tls-key",
                 str(junk))  # fmt: skip
    assert result.returncode == 2
    assert f"cannot use the TLS files: certificate {junk} holds no PEM" in result.stderr
    # Each file whole, but not a pair: OpenSSL's words, said of the two files.
    agent, client = pki["agent"], pki["client"]
    result = run("agent", "--listen", "127.0.0.1:0", "--tls-cert", str(agent.cert), "--tls-key",
                 str(client.key))  # fmt: skip
    assert result.returncode == 2
    assert (f"certificate {agent.cert} with key {client.key}: KEY_VALUES_MISMATCH"
            in result.stderr), result.stderr  # fmt: skip
    result = run("probe", "127.0.0.1:1", "--tls-cert", str(client.cert), "--tls-key",
                 str(agent.key))  # fmt: skip
    assert result.returncode == 2 and f"with key {agent.key}: KEY_VALUES_MISMATCH" in result.stderr
    result = run("agent", "--listen", "127.0.0.1:0", "--tls-client-ca", str(pki["ca"]))
    assert result.returncode == 2 and "needs --tls-cert" in result.stderr
