from __future__ import annotations

import os

import pytest

from dltui import userfiles
from dltui.protocol import auth


def test_client_mac_depends_on_secret_challenge_and_nonce():
    challenge, nonce = auth.new_nonce(), auth.new_nonce()
    mac = auth.client_mac(b"s" * 32, challenge, nonce)
    assert auth.same(mac, auth.client_mac(b"s" * 32, challenge, nonce))
    assert not auth.same(mac, auth.client_mac(b"t" * 32, challenge, nonce))
    assert not auth.same(mac, auth.client_mac(b"s" * 32, auth.new_nonce(), nonce))
    assert not auth.same(mac, auth.client_mac(b"s" * 32, challenge, auth.new_nonce()))
    assert not auth.same(mac, None)


def test_agent_proof_is_not_the_client_mac():
    challenge, nonce = auth.new_nonce(), auth.new_nonce()
    assert auth.agent_proof(b"s" * 32, challenge, nonce) != auth.client_mac(
        b"s" * 32, challenge, nonce
    )


def test_load_secret(tmp_path):
    path = tmp_path / "secret"
    path.write_text("0123456789abcdef0123\n")
    os.chmod(path, 0o600)
    assert userfiles.load_secret(path) == b"0123456789abcdef0123"


def test_secret_readable_by_others_is_refused(tmp_path):
    path = tmp_path / "secret"
    path.write_text("0123456789abcdef0123")
    os.chmod(path, 0o644)
    with pytest.raises(userfiles.SecretFileError, match="chmod 600"):
        userfiles.load_secret(path)


def test_short_or_missing_secret_is_refused(tmp_path):
    path = tmp_path / "secret"
    path.write_text("short")
    os.chmod(path, 0o600)
    with pytest.raises(userfiles.SecretFileError, match="shorter"):
        userfiles.load_secret(path)
    with pytest.raises(userfiles.SecretFileError, match="cannot read"):
        userfiles.load_secret(tmp_path / "missing")
