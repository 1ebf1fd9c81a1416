"""TLS for the client: the context that checks an agent's certificate, and what a failure means
in words a user can act on."""

from __future__ import annotations

import ssl

from dltui.client.target import TlsOptions
from dltui.userfiles import CERTIFICATE, PRIVATE_KEY, check_pem, load_pair


def client_context(options: TlsOptions) -> ssl.SSLContext:
    """Verify the agent's certificate and host name (against `ca`, or the system's roots) and,
    for mutual TLS, present our own. OSError or ssl.SSLError when a file is unusable."""
    if options.ca is not None:
        check_pem(options.ca, "CA", CERTIFICATE)
    if options.cert is not None:  # without a key file, the key is in the certificate's
        check_pem(
            options.cert, "certificate", CERTIFICATE, *(() if options.key else (PRIVATE_KEY,))
        )
    if options.key is not None:
        check_pem(options.key, "key", PRIVATE_KEY)
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=options.ca)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if options.cert is not None:
        load_pair(context, options.cert, options.key)
    return context


# OpenSSL's reasons for a peer that did not answer in TLS at all.
_NOT_TLS = {"WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG",
            "UNKNOWN_PROTOCOL", "HTTP_REQUEST"}  # fmt: skip
_CLIENT_CERT = {"TLSV13_ALERT_CERTIFICATE_REQUIRED", "SSLV3_ALERT_HANDSHAKE_FAILURE"}
_CLIENT_CERT_REFUSED = {"TLSV1_ALERT_UNKNOWN_CA", "SSLV3_ALERT_BAD_CERTIFICATE",
                        "SSLV3_ALERT_CERTIFICATE_UNKNOWN", "TLSV1_ALERT_DECRYPT_ERROR"}  # fmt: skip


def describe_tls_error(exc: ssl.SSLError) -> str:
    """Why a TLS connection failed, and what to do about it."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        why = exc.verify_message or exc.reason or str(exc)
        if "hostname" in why.lower() or "ip address mismatch" in why.lower():
            return f"TLS: the agent's certificate is for another name ({why})"
        return (
            f"TLS: the agent's certificate is not trusted ({why}); "
            "pass --tls-ca with the CA that signed it"
        )
    reason = exc.reason or ""
    if reason in _NOT_TLS:
        return "TLS: the agent does not speak TLS (start it with --tls-cert and --tls-key)"
    if reason in _CLIENT_CERT:
        return "TLS: the agent requires a client certificate: pass --tls-cert and --tls-key"
    if reason in _CLIENT_CERT_REFUSED:
        return "TLS: the agent refused our client certificate (not signed by a CA it trusts)"
    return f"TLS handshake failed: {reason or exc}"
