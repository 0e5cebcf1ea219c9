"""The pool's one network port (HTCondor's shared_port): TLS, IDTOKENS, authorization, relay.

Started by the master when the pool listens on the network (COLLECTOR_HOST
``host:port``, ``config_files.network_endpoint``); it listens there, and for every
connection:

1. TLS (the pool's host certificate: AUTH_SSL_SERVER_CERTFILE / _KEYFILE, made with
   the pool's own CA on the first start when missing, ``daemons.pool_ssl``);
2. IDTOKENS authentication with proof of possession (``daemons.netauth``), or the
   resumption of a cached session;
3. one request frame (``ipc``'s), at most NET_MAX_FRAME_BYTES; the daemon it names
   (``schedd``, ``collector``) and its command give the authorization level
   (``daemons.authz``), which the identity must hold under ALLOW_*/DENY_* and its
   token's scope: else a ``PermissionDenied`` reply naming identity, command, level;
4. the request goes to that daemon's Unix socket carrying the authenticated
   identity (``as``: the daemon takes it instead of its peer's uid), and the frames
   are relayed both ways until the daemon closes.

Bounds: at most SHARED_PORT_MAX_WORKERS connections at once (more are closed at
once), SEC_HANDSHAKE_TIMEOUT seconds for TLS and authentication together (a slow
or silent client is dropped), frames before authentication at most 64 KiB and
after it NET_MAX_FRAME_BYTES, a client silent for NET_IDLE_TIMEOUT seconds while
the daemon waits for it is dropped.  Nothing is read from a client that has not
authenticated beyond the handshake's frames.
"""

from __future__ import annotations

import os
import socket
import ssl
import threading
import time
from pathlib import Path

from jobledger.daemons import authz, ipc, netauth, pool_ssl
from jobledger.daemons.daemon import Daemon, main_for
from jobledger.eventcore.errors import (AuthenticationFailed, HTCondorException, JobledgerError,
                                        PermissionDenied, TokenError)

TARGETS = ("collector", "schedd")       # the daemons reachable over the network
DEFAULTS = {
    "ALLOW_READ": "*", "ALLOW_WRITE": "*",
    "ALLOW_ADMINISTRATOR": "condor@$(TRUST_DOMAIN)", "ALLOW_DAEMON": "condor@$(TRUST_DOMAIN)",
}


class SharedPort(Daemon):
    name = "shared_port"
    log_name = "SharedPortLog"

    def setup(self) -> None:
        endpoint = self.endpoint
        if endpoint is None:
            self.refuse(HTCondorException("SHARED_PORT is running, but COLLECTOR_HOST names no "
                                          "host:port to listen on"))
            return
        self.host_port: tuple[str, int] = endpoint
        self.workers = threading.BoundedSemaphore(self.config_int("SHARED_PORT_MAX_WORKERS", 64))
        self.handshake_timeout = self.config_float("SEC_HANDSHAKE_TIMEOUT", 10.0)
        self.max_frame = self.config_int("NET_MAX_FRAME_BYTES", 64 << 20)
        self.idle = self.config_float("NET_IDLE_TIMEOUT", 60.0)
        self.auth = netauth.Server(self.lookup)
        self.context = self._tls_context()
        self.listener = socket.create_server(endpoint, family=_family(endpoint[0]), backlog=128,
                                             reuse_port=False)
        self.log.info("listening on %s:%d (TLS, IDTOKENS)", endpoint[0], endpoint[1])

    def lookup(self, name: str) -> str | None:
        value = self.config(name, "")
        if not value and name in DEFAULTS:
            value = DEFAULTS[name].replace("$(TRUST_DOMAIN)", self.config("TRUST_DOMAIN", "") or
                                           self.config("UID_DOMAIN", ""))
        return value or None

    def _tls_context(self) -> ssl.SSLContext:
        local = self.local_dir / "ssl"
        cert = Path(self.config("AUTH_SSL_SERVER_CERTFILE", "") or local / "host.crt")
        key = Path(self.config("AUTH_SSL_SERVER_KEYFILE", "") or local / "host.key")
        if "," in str(cert) or "," in str(key):      # HTCondor's default lists: the pool's own
            cert, key = local / "host.crt", local / "host.key"
        if self.config_bool("COLLECTOR_BOOTSTRAP_SSL_CERTIFICATE", True):
            ca = Path(self.config("TRUST_DOMAIN_CAFILE", "") or local / "trust_domain_ca.pem")
            ca_key = Path(self.config("TRUST_DOMAIN_CAKEY", "") or local / "trust_domain_ca_privkey.pem")
            if not str(ca).startswith(str(self.local_dir)) and not ca.parent.exists():
                ca, ca_key = local / "trust_domain_ca.pem", local / "trust_domain_ca_privkey.pem"
            domain = self.lookup("TRUST_DOMAIN") or self.host
            if pool_ssl.bootstrap(ca, ca_key, cert, key, pool_ssl.host_names(self.host_port[0]), domain):
                self.log.info("made the pool's CA %s and host certificate %s", ca, cert)
        return pool_ssl.server_context(cert, key)

    def started(self) -> None:
        super().started()
        thread = threading.Thread(target=self._accept_loop, name="net-accept", daemon=True)
        self._threads.append(thread)
        thread.start()

    def teardown(self) -> None:
        try:
            self.listener.close()
        except OSError:
            pass

    def _accept_loop(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, peer = self.listener.accept()
            except OSError:
                if self.stopping.is_set():
                    return
                time.sleep(0.05)
                continue
            if not self.workers.acquire(blocking=False):
                conn.close()        # too many at once: refused before any work
                continue
            threading.Thread(target=self._serve, args=(conn, peer[0]), name="net-conn", daemon=True).start()

    def _serve(self, conn: socket.socket, host: str) -> None:
        try:
            deadline = time.monotonic() + self.handshake_timeout
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)   # small frames: no Nagle stalls
            conn.settimeout(self.handshake_timeout)
            try:
                tls = self.context.wrap_socket(conn, server_side=True)
            except (OSError, ssl.SSLError) as exc:
                self.log.info("TLS from %s failed: %s", host, exc)
                conn.close()
                return
            with tls:
                try:
                    session = _within(deadline, tls, self.auth.handshake)
                except (AuthenticationFailed, TokenError) as exc:
                    self.log.info("authentication from %s failed: %s", host, exc)
                    return
                except (OSError, ValueError, RecursionError) as exc:
                    self.log.info("handshake from %s broke off: %s", host, exc)
                    return
                self._relay(tls, host, session)
        finally:
            self.workers.release()

    def _relay(self, tls: ssl.SSLSocket, host: str, session: netauth.Session) -> None:
        tls.settimeout(self.idle)
        try:
            request = ipc.recv_message(tls, self.max_frame)
        except (OSError, ValueError, RecursionError):
            return
        if not isinstance(request, dict) or not isinstance(request.get("cmd"), str):
            _send(tls, {"err": ["HTCondorException", "a request must name a command", {}]})
            return
        target = session.target
        args = request.get("args") if isinstance(request.get("args"), dict) else {}
        try:
            if target not in TARGETS:
                raise HTCondorException(f"no daemon {target!r} is reachable over the network "
                                        f"(only {', '.join(TARGETS)})")
            level = authz.authorize(target, request["cmd"], args, session.user, host, self.lookup,
                                    session.scopes)
        except (PermissionDenied, HTCondorException) as exc:
            self.log.info("refused %s from %s: %s", request["cmd"], session.user, exc)
            _send(tls, {"err": [type(exc).__name__, str(exc), ipc._detail(exc, type(exc).__name__)]})
            return
        if request["cmd"] == "ping":
            _send(tls, {"ok": {"name": target, "pid": os.getpid(), "up": True, "user": session.user,
                               "authz": level, "session": session.sid}})
            return
        request["as"] = {"user": session.user, "host": host, "scopes": session.scopes,
                         "super": authz.is_super_user(session.user, self.lookup)}
        try:
            daemon = ipc.connect(ipc.sinful(str(self.run_dir / f"{target}.sock")), timeout=None)
        except JobledgerError as exc:
            _send(tls, {"err": ["ConnectionLost", str(exc), {"classes": ["ConnectionLost"]}]})
            return
        with daemon:
            try:
                ipc.send_message(daemon, request)
                self._answers(tls, daemon)
            except (OSError, ValueError, RecursionError):
                return

    def _answers(self, tls: ssl.SSLSocket, daemon: socket.socket) -> None:
        """The daemon's frames to the client until it closes; when the daemon asks for an
        upload's chunks (``more``), the client's frames to it (each bounded) up to the end
        mark.  One thread, one direction at a time: the protocol alternates."""
        while True:
            try:
                message = ipc.recv_message(daemon)
            except ConnectionError:
                return
            ipc.send_message(tls, message)
            if isinstance(message, dict) and message.get("more"):
                self._upload(tls, daemon)

    def _upload(self, tls: ssl.SSLSocket, daemon: socket.socket) -> None:
        while True:
            chunk = ipc.recv_message(tls, self.max_frame)
            try:
                ipc.send_message(daemon, chunk)
            except OSError:
                return      # the daemon stopped reading: its reply says why
            if not isinstance(chunk, dict) or "chunk" not in chunk:
                return


def _send(sock, message) -> None:
    try:
        ipc.send_message(sock, message)
    except OSError:
        pass


def _within(deadline: float, sock: ssl.SSLSocket, step):
    """``step(sock)`` with every read bounded by what is left of ``deadline``."""
    class Bounded:
        def __getattr__(self, name):
            return getattr(sock, name)

        def recv(self, size):
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the handshake took too long")
            sock.settimeout(left)
            return sock.recv(size)
    return step(Bounded())


def _family(host: str) -> int:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


if __name__ == "__main__":
    main_for(SharedPort)
