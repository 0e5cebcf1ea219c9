"""X.509 proxy files (``x509userproxy``): what HTCondor reads of one, and where a refreshed
one goes.

``proxy_facts(pem, source)`` reads the first certificate of a PEM file (a proxy holds its
certificate, its key and the chain behind it) and answers its expiration (the Unix time
of notAfter, HTCondor's ``x509UserProxyExpiration``) and subject; anything that is not a
PEM certificate is a ``ProxyError`` naming the source.  The proxy's text itself is never
written to the journal or a log: only its expiration is.

``replace_file(path, data)`` puts a refreshed proxy in place whole, owner-only (0600),
through a temporary file renamed over the old one, so a job reading it never sees half.
"""

from __future__ import annotations

from pathlib import Path

from jobledger.daemons.whole_file import write_whole
from jobledger.eventcore.errors import HTCondorException

MAX_PROXY_BYTES = 1 << 20
_BEGIN = b"-----BEGIN CERTIFICATE-----"


class ProxyError(HTCondorException, ValueError):
    """A proxy that cannot be used: where and why."""


def proxy_facts(pem: bytes, source: str) -> dict:
    """{"expiration": unix time, "subject": RFC 4514 text} of the proxy's certificate."""
    from cryptography import x509
    if len(pem) > MAX_PROXY_BYTES:
        raise ProxyError(f"{source}: larger than {MAX_PROXY_BYTES} bytes: not a proxy")
    start = pem.find(_BEGIN)
    if start < 0:
        raise ProxyError(f"{source}: no PEM certificate in it")
    try:
        cert = x509.load_pem_x509_certificate(pem[start:])
    except ValueError as exc:
        raise ProxyError(f"{source}: not a readable certificate ({exc})") from None
    return {"expiration": int(cert.not_valid_after_utc.timestamp()), "subject": cert.subject.rfc4514_string()}


def replace_file(path: Path, data: bytes) -> None:
    """``path`` holds ``data`` whole, mode 0600 (or is left as it was)."""
    try:
        write_whole(path, data, 0o600)
    except OSError as exc:
        raise HTCondorException(f"cannot write the proxy {path}: {exc.strerror or exc}") from None
