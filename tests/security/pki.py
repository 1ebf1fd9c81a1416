"""A throwaway PKI made at test time: a CA, certificates it signs, and impostors."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_DAY = datetime.timedelta(days=1)


@dataclass
class Issued:
    cert: Path
    key: Path


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _certificate(
    subject: str,
    issuer: x509.Name,
    public_key: ec.EllipticCurvePublicKey,
    signing_key: ec.EllipticCurvePrivateKey,
    hosts: tuple[str, ...] = (),
    client: bool = False,
    ca: bool = False,
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _DAY)
        .not_valid_after(now + _DAY)
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ca:
        usage = x509.KeyUsage(
            digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
            key_encipherment=False, data_encipherment=False, key_agreement=False,
            encipher_only=False, decipher_only=False,
        )  # fmt: skip
        builder = builder.add_extension(usage, critical=True)
    else:
        purpose = ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH
        builder = builder.add_extension(x509.ExtendedKeyUsage([purpose]), critical=False)
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return builder.sign(signing_key, hashes.SHA256())


def _write(directory: Path, name: str, cert: x509.Certificate, key) -> Issued:
    issued = Issued(directory / f"{name}.pem", directory / f"{name}.key")
    issued.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    issued.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    issued.key.chmod(0o600)
    return issued


class Authority:
    """A CA; its certificate is `cert` (PEM) in `directory`."""

    def __init__(self, directory: Path, name: str) -> None:
        self.directory = directory
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.certificate = _certificate(name, _name(name), self.key.public_key(), self.key, ca=True)
        self.cert = _write(directory, f"{name}-ca", self.certificate, self.key).cert

    def issue(self, name: str, hosts: tuple[str, ...] = (), client: bool = False) -> Issued:
        key = ec.generate_private_key(ec.SECP256R1())
        subject = self.certificate.subject
        cert = _certificate(name, subject, key.public_key(), self.key, hosts, client)
        return _write(self.directory, name, cert, key)


def self_signed(directory: Path, name: str, hosts: tuple[str, ...]) -> Issued:
    """A certificate that vouches only for itself."""
    key = ec.generate_private_key(ec.SECP256R1())
    cert = _certificate(name, _name(name), key.public_key(), key, hosts)
    return _write(directory, name, cert, key)
