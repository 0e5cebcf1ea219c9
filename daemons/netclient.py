"""The client side of the pool's network transport: TCP, TLS, IDTOKENS, then ``ipc`` frames.

``connect(host, port, target)`` opens a TLS connection to the pool's shared port,
checks the server's certificate (AUTH_SSL_CLIENT_CAFILE, or the known_hosts file
on first use: ``daemons.pool_ssl``), authenticates with a token
(``daemons.netauth``; a cached session when there is one) and names the daemon
wanted (``target``: collector, schedd).  The socket it returns speaks ``ipc``'s
frames as a Unix socket to that daemon would, so every client call works over it
unchanged; its ``auth_info`` says who the pool took us for.

TLS sessions are resumed (the ticket of the last connection to an endpoint is kept
in this process), and so are authenticated sessions: a second command to the same
pool pays neither the certificate exchange nor the token exchange.
"""

from __future__ import annotations

import contextvars
import socket
import ssl
import threading

from jobledger.daemons import netauth, pool_ssl
from jobledger.eventcore.errors import AuthenticationFailed, HTCondorIOError, JobledgerError

DEFAULT_PORT = 9618
# a token to prefer over the token files (htcondor2.SecurityContext, SecMan.setToken)
PREFERRED_TOKEN: contextvars.ContextVar[str | None] = contextvars.ContextVar("preferred_token", default=None)
_process_token: list[str | None] = [None]
# SecMan.setTag / setPoolPassword: per thread (and context), as v1's SecMan sets them
SESSION_TAG: contextvars.ContextVar[str] = contextvars.ContextVar("session_tag", default="")
POOL_PASSWORD: contextvars.ContextVar[bytes | None] = contextvars.ContextVar("pool_password", default=None)
_tls_sessions: dict[str, ssl.SSLSession] = {}
_contexts: dict[str, ssl.SSLContext] = {}
_lock = threading.Lock()


def lookup(name: str) -> str | None:
    """A configuration value as text (None when undefined or empty)."""
    from jobledger.daemons.config_files import param
    try:
        value = param.get(name)
    except Exception:   # noqa: BLE001 - a client with no usable configuration uses defaults
        return None
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def set_process_token(token: str | None) -> None:
    """``SecMan.setToken``: the token this process prefers (None: the token files)."""
    _process_token[0] = token


def forget_sessions() -> None:
    """``SecMan.invalidateAllSessions``: the next connection authenticates afresh."""
    netauth.CLIENT_SESSIONS.clear()
    with _lock:
        _tls_sessions.clear()


def _context(cafile: str | None) -> ssl.SSLContext:
    key = cafile or ""
    with _lock:
        context = _contexts.get(key)
        if context is None:
            context = _contexts[key] = pool_ssl.client_context(cafile)
        return context


def connect(host: str, port: int, target: str, timeout: float | None = 30.0) -> ssl.SSLSocket:
    """An authenticated connection to daemon ``target`` through the pool's port at host:port."""
    from jobledger.daemons.ipc import ConnectionLost
    endpoint = f"{host}:{port}"
    try:
        raw = socket.create_connection((host, port), timeout=timeout)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)   # small frames: no Nagle stalls
    except OSError as exc:
        raise ConnectionLost(f"cannot reach {endpoint}: {exc.strerror or exc}") from exc
    cafile = lookup("AUTH_SSL_CLIENT_CAFILE")
    try:
        with _lock:
            resume = _tls_sessions.get(endpoint)
        tls = _context(cafile).wrap_socket(raw, server_hostname=host if cafile else None, session=resume)
    except ssl.SSLError as exc:
        raw.close()
        raise AuthenticationFailed(f"TLS with {endpoint} failed: {exc.reason or exc}", method="SSL") from None
    except OSError as exc:
        raw.close()
        raise ConnectionLost(f"TLS with {endpoint} failed: {exc.strerror or exc}") from exc
    try:
        if not cafile:
            der = tls.getpeercert(binary_form=True) or b""
            pool_ssl.check_known_host(pool_ssl.known_hosts_path(lookup), endpoint, der)
        token = PREFERRED_TOKEN.get() or _process_token[0]
        info = netauth.client_handshake(tls, endpoint, target, lookup, token, SESSION_TAG.get(),
                                        POOL_PASSWORD.get())
        if tls.session is not None:
            with _lock:
                _tls_sessions[endpoint] = tls.session
    except JobledgerError:
        tls.close()
        raise
    except (OSError, ValueError, RecursionError) as exc:
        tls.close()
        raise ConnectionLost(f"the connection to {endpoint} failed during authentication: {exc}") from exc
    cipher = tls.cipher()
    setattr(tls, "auth_info", dict(info, endpoint=endpoint, encryption=cipher[0] if cipher else "",
                                   tls=tls.version() or ""))
    return tls


def parse_endpoint(text: str) -> tuple[str, int]:
    """``host[:port]`` (default port 9618) -> (host, port); ``HTCondorIOError`` if malformed."""
    host, colon, port = text.strip().rpartition(":")
    if not colon:
        host, port = text.strip(), str(DEFAULT_PORT)
    host = host.strip("[]")
    try:
        number = int(port)
    except ValueError:
        raise HTCondorIOError(f"bad address {text!r}: the port is not a number") from None
    if not host or not 0 < number < 65536:
        raise HTCondorIOError(f"bad address {text!r}")
    return host, number
