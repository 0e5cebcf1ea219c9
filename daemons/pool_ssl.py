"""The pool's TLS: its own CA and host certificate, and the trust of the tools.

When the pool listens on the network and no certificate is configured, the first
start makes a CA (TRUST_DOMAIN_CAFILE / TRUST_DOMAIN_CAKEY) and a host certificate
signed by it (AUTH_SSL_SERVER_CERTFILE / AUTH_SSL_SERVER_KEYFILE) for the names the
pool is reached by (the COLLECTOR_HOST host, this machine's names, 127.0.0.1), as
HTCondor's collector does with COLLECTOR_BOOTSTRAP_SSL_CERTIFICATE.  Keys are
ECDSA P-256, files mode 0600; existing files are never replaced.

A tool trusts a server either through a CA file (AUTH_SSL_CLIENT_CAFILE: the chain
and the host name are checked), or on first use: the server's certificate is
written to the known_hosts file (SEC_KNOWN_HOSTS, default ``~/.condor/known_hosts``)
as HTCondor writes it, ``<host:port> SSL <base64 DER>``, and a later connection
whose certificate differs is refused (``AuthenticationFailed``), as is one to a host
whose line starts with ``!``.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import os
import socket
import ssl
import threading
from pathlib import Path

from jobledger.eventcore.errors import AuthenticationFailed

Lookup = "callable"   # name -> str | None (a config lookup)
_KNOWN_LOCK = threading.Lock()


def _write_private(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, path)


def host_names(host: str) -> list[str]:
    """The names a host certificate covers: ``host``, this machine's names, loopback."""
    names = [host, socket.gethostname(), socket.getfqdn(), "localhost", "127.0.0.1"]
    return list(dict.fromkeys(n for n in names if n))


def bootstrap(ca_cert: Path, ca_key: Path, cert: Path, key: Path, names: list[str],
              trust_domain: str) -> bool:
    """Make the CA and the host certificate unless both exist; True when made."""
    if cert.exists() and key.exists():
        return False
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    pem = serialization.Encoding.PEM
    if ca_cert.exists() and ca_key.exists():
        authority = x509.load_pem_x509_certificate(ca_cert.read_bytes())
        loaded = serialization.load_pem_private_key(ca_key.read_bytes(), None)
        if not isinstance(loaded, ec.EllipticCurvePrivateKey):
            raise ValueError(f"{ca_key} is not the pool CA's ECDSA key")
        authority_key = loaded
    else:
        authority_key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "jobledger"),
                             x509.NameAttribute(NameOID.COMMON_NAME, f"{trust_domain} pool CA"[:64])])
        authority = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
                     .public_key(authority_key.public_key()).serial_number(x509.random_serial_number())
                     .not_valid_before(now - datetime.timedelta(minutes=5))
                     .not_valid_after(now + datetime.timedelta(days=3650))
                     .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                     .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False),
                                    critical=True)
                     .sign(authority_key, hashes.SHA256()))
        _write_private(ca_key, authority_key.private_bytes(
            pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        _write_private(ca_cert, authority.public_bytes(pem))
    host_key = ec.generate_private_key(ec.SECP256R1())
    alternatives: list[x509.GeneralName] = []
    for name in names:
        try:
            alternatives.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            alternatives.append(x509.DNSName(name))
    host = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0][:64])]))
            .issuer_name(authority.subject).public_key(host_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=825))
            .add_extension(x509.SubjectAlternativeName(alternatives), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(authority_key, hashes.SHA256()))
    _write_private(key, host_key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))
    _write_private(cert, host.public_bytes(pem) + authority.public_bytes(pem))
    return True


def server_context(cert: Path, key: Path) -> ssl.SSLContext:
    """TLS 1.2+ for the pool's listener (the chain in ``cert``)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(str(cert), str(key))
    return context


def client_context(cafile: str | None) -> ssl.SSLContext:
    """A client context: verifying against ``cafile`` (and the host name), or taking
    any certificate for a known_hosts check after the handshake."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if cafile:
        context.load_verify_locations(cafile)
        context.check_hostname = True
        context.verify_mode = ssl.CERT_REQUIRED
    else:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def known_hosts_path(get) -> Path:
    text = (get("SEC_KNOWN_HOSTS") or "").strip()
    return Path(text) if text else Path.home() / ".condor" / "known_hosts"


def check_known_host(path: Path, endpoint: str, der: bytes, trust_new: bool = True) -> None:
    """Trust on first use: ``der`` (the server's certificate) must be the one known for
    ``endpoint``; unknown, it is added (unless ``trust_new`` is false)."""
    shown = base64.b64encode(der).decode("ascii")
    with _KNOWN_LOCK:
        try:
            lines = path.read_text("utf-8", "replace").splitlines()
        except FileNotFoundError:
            lines = []
        except OSError as exc:
            raise AuthenticationFailed(f"cannot read known hosts file {path}: {exc.strerror}",
                                       method="SSL") from None
        for line in lines:
            parts = line.split()
            if len(parts) != 3 or parts[1] != "SSL":
                continue
            host, rejected = (parts[0][1:], True) if parts[0].startswith("!") else (parts[0], False)
            if host != endpoint:
                continue
            if rejected:
                raise AuthenticationFailed(f"the certificate of {endpoint} is marked rejected in {path}",
                                           method="SSL")
            if parts[2] == shown:
                return
            raise AuthenticationFailed(
                f"the certificate of {endpoint} is not the one trusted for it in {path}: "
                "another server answers at this address, or the pool made a new certificate "
                "(remove its line to trust the new one)", method="SSL")
        if not trust_new:
            raise AuthenticationFailed(f"{endpoint} is not in the known hosts file {path}", method="SSL")
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a") as handle:
            handle.write(f"{endpoint} SSL {shown}\n")
