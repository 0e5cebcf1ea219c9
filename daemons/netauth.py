"""IDTOKENS authentication over the pool's TLS connections, with proof of possession.

As in HTCondor's TOKEN method, the token's signature never leaves the client: the
client sends the token's ``header.payload`` (T) and a random ``ra``; the server, which
holds the signing key, recomputes the signature S; both derive
``K = HKDF(S, salt = seed_a || T, "master ka")`` and ``K' = HKDF(S, seed_b || T,
"master kb")`` and run AKEP2 (Bellare-Rogaway):

    A -> B : T, rA
    B -> A : B, rB, HMAC_K(B | A | rA | rB)        A checks it: a server without the key fails here
    A -> B : HMAC_K(A | rB)                        B checks it: a token of another key fails here
    B -> A : ok (user, session id, lease);   session key W = HMAC_K'(rB)

(A is the token's ``sub``, B ``condor@TRUST_DOMAIN``; the seeds are this project's
own constants, so the exchange is ours, not CEDAR's, while the tokens and keys are
HTCondor's.)  Before it, the server says who it is (``hello``: its trust domain and
the signing keys it has), so a client picks the token HTCondor's client would pick.

A session is cached on both sides for SEC_DEFAULT_SESSION_DURATION (never past the
token's ``exp``): a client that comes back sends ``resume`` with its session id and
``HMAC_W(id)``, inside TLS, and skips the exchange; a server that no longer knows
the session answers ``again`` and the full exchange follows.  Every message is an
``ipc`` frame of at most ``HANDSHAKE_LIMIT`` bytes.
"""

from __future__ import annotations

import base64
import contextvars
import os
import hashlib
import hmac
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

from jobledger.daemons import idtokens, ipc
from jobledger.eventcore.errors import AuthenticationFailed, TokenError

HANDSHAKE_LIMIT = 65536
ANONYMOUS = "unauthenticated@unmapped"
# set by a client asking for a token: with no token to show, it goes in anonymously
ALLOW_ANONYMOUS: "contextvars.ContextVar[bool]" = contextvars.ContextVar("allow_anonymous", default=False)
NONCE = 32
MAX_SESSIONS = 10000
_SEED_A = b"jobledger AKEP2 K seed\x00"
_SEED_B = b"jobledger AKEP2 K' seed\x00"
Lookup = Callable[[str], "str | None"]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(value, what: str) -> bytes:
    if not isinstance(value, str) or len(value) > 200:
        raise AuthenticationFailed(f"bad handshake message: {what} is missing")
    try:
        return base64.b64decode(value, validate=True)
    except ValueError:
        raise AuthenticationFailed(f"bad handshake message: {what} is not base64") from None


def _mac(key: bytes, *parts: bytes) -> bytes:
    return hmac.new(key, b"\x00".join(parts), hashlib.sha256).digest()


def derive(signature: bytes, signing_input: str) -> tuple[bytes, bytes]:
    """K and K' of AKEP2 from the token's signature and its header.payload."""
    text = signing_input.encode("ascii")
    return (idtokens.hkdf(signature, _SEED_A + text, b"master ka"),
            idtokens.hkdf(signature, _SEED_B + text, b"master kb"))


class Session:
    """An authenticated identity, its token's scopes, until ``expires`` (monotonic)."""

    def __init__(self, sid: str, user: str, scopes: list[str] | None, key: bytes, expires: float,
                 target: str = ""):
        self.sid = sid
        self.user = user
        self.scopes = scopes
        self.key = key
        self.expires = expires
        self.target = target

    def info(self) -> dict:
        return {"user": self.user, "session": self.sid, "authz": self.scopes,
                "lease": max(0, int(self.expires - time.monotonic()))}


class SessionCache:
    """Sessions by id, bounded (the oldest go first) and expiring."""

    def __init__(self, limit: int = MAX_SESSIONS):
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._lock = threading.Lock()
        self.limit = limit

    def put(self, key: str, session: Session) -> None:
        with self._lock:
            self._sessions[key] = session
            self._sessions.move_to_end(key)
            while len(self._sessions) > self.limit:
                self._sessions.popitem(last=False)

    def get(self, key: str) -> Session | None:
        with self._lock:
            session = self._sessions.get(key)
            if session is not None and session.expires <= time.monotonic():
                del self._sessions[key]
                return None
            return session

    def drop(self, key: str) -> None:
        with self._lock:
            self._sessions.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._sessions.clear()


def _refuse(sock, exc: Exception) -> None:
    try:
        ipc.send_message(sock, {"err": [type(exc).__name__, str(exc), ipc._detail(exc, type(exc).__name__)]})
    except OSError:
        pass


# -- server side ------------------------------------------------------------------

class Server:
    """The server's half: its trust domain and keys from ``get``, its sessions."""

    def __init__(self, get: Lookup):
        self.get = get
        self.sessions = SessionCache()
        self.revoked = idtokens.revocation_check(get)

    def keys(self) -> list[str]:
        """The signing keys this pool has: POOL (when its file exists), then the
        other files of SEC_PASSWORD_DIRECTORY."""
        names = []
        try:
            path, _ = idtokens.key_path(idtokens.POOL, self.get)
            if path.is_file():
                names.append(idtokens.POOL)
        except TokenError:
            pass
        directory = (self.get("SEC_PASSWORD_DIRECTORY") or "").strip()
        if directory:
            try:
                names += sorted(n for n in os.listdir(directory) if not n.startswith("."))
            except OSError:
                pass
        return list(dict.fromkeys(names))

    def name(self) -> str:
        return f"condor@{idtokens.trust_domain(self.get)}"

    def handshake(self, sock) -> Session:
        """Authenticate the client on ``sock``: its session (``AuthenticationFailed``
        after telling the client why)."""
        ipc.send_message(sock, {"hello": {"issuer": idtokens.trust_domain(self.get), "keys": self.keys(),
                                          "methods": ["IDTOKENS"], "server": self.name()}})
        for _ in range(2):      # a resume the server has forgotten, then the exchange
            message = _receive(sock)
            if not isinstance(message, dict):
                raise AuthenticationFailed("bad handshake message")
            if "resume" in message:
                session = self._resume(message)
                if session is None:
                    ipc.send_message(sock, {"again": True})
                    continue
                ipc.send_message(sock, {"ok": session.info()})
                return session
            try:
                return self._exchange(sock, message)
            except (AuthenticationFailed, TokenError) as exc:
                refusal = exc if isinstance(exc, AuthenticationFailed) else AuthenticationFailed(str(exc))
                _refuse(sock, refusal)
                raise refusal from None
        raise AuthenticationFailed("the client resumed an unknown session twice")

    def _resume(self, message: dict) -> Session | None:
        sid = message.get("resume")
        if not isinstance(sid, str):
            return None
        session = self.sessions.get(sid)
        if session is None:
            return None
        proof = _unb64(message.get("mac"), "mac")
        if not hmac.compare_digest(proof, _mac(session.key, sid.encode())):
            return None
        target = message.get("target")
        return Session(session.sid, session.user, session.scopes, session.key, session.expires,
                       target if isinstance(target, str) else "")

    def _exchange(self, sock, message: dict) -> Session:
        if message.get("auth") == "ANONYMOUS":
            # no token (yet): a session for ALLOW-level commands only (asking for a token)
            target = message.get("target")
            session = Session(secrets.token_hex(16), ANONYMOUS, [], b"", time.monotonic() + 60,
                              target if isinstance(target, str) else "")
            ipc.send_message(sock, {"ok": session.info()})
            return session
        if message.get("auth") != "IDTOKENS":
            raise AuthenticationFailed(f"authentication method {message.get('auth')!r} is not accepted "
                                       "(this pool takes IDTOKENS)", method=str(message.get("auth")))
        parsed = idtokens.parse(str(message.get("token", "")), signed=False)
        identity = parsed.identity
        if parsed.kid not in self.keys():
            raise AuthenticationFailed(f"the token names signing key {parsed.kid!r}, which this pool "
                                       "does not have", identity)
        try:
            idtokens.check_claims(parsed, self.get, revoked=self.revoked)
            signature = idtokens.sign(parsed.signing_input, idtokens.read_signing_key(parsed.kid, self.get))
        except TokenError as exc:
            raise AuthenticationFailed(str(exc), identity) from None
        ka, kb = derive(signature, parsed.signing_input)
        ra, rb = _unb64(message.get("ra"), "ra"), secrets.token_bytes(NONCE)
        server = self.name().encode()
        ipc.send_message(sock, {"rb": _b64(rb), "server": self.name(),
                                "mac": _b64(_mac(ka, server, identity.encode(), ra, rb))})
        answer = _receive(sock)
        if not isinstance(answer, dict) or "abort" in answer:
            raise AuthenticationFailed(f"the client gave up: {str(answer.get('abort'))[:200]}"
                                       if isinstance(answer, dict) else "bad handshake message", identity)
        if not hmac.compare_digest(_unb64(answer.get("mac"), "mac"), _mac(ka, identity.encode(), rb)):
            raise AuthenticationFailed(f"the token's signature is not the pool's: it was not signed by "
                                       f"signing key {parsed.kid} of this pool", identity)
        duration = _int(self.get("SEC_DEFAULT_SESSION_DURATION"), 86400)
        exp = parsed.claims.get("exp")
        if isinstance(exp, int):
            duration = min(duration, max(0, int(exp - time.time())))
        target = message.get("target")
        session = Session(secrets.token_hex(16), identity, parsed.scopes, _mac(kb, rb),
                          time.monotonic() + duration, target if isinstance(target, str) else "")
        self.sessions.put(session.sid, session)
        ipc.send_message(sock, {"ok": session.info()})
        return session


def _receive(sock):
    """One handshake frame (at most HANDSHAKE_LIMIT bytes of JSON)."""
    try:
        return ipc.recv_message(sock, HANDSHAKE_LIMIT)
    except RecursionError:
        raise AuthenticationFailed("bad handshake message: JSON nested too deeply") from None


def _int(text: str | None, default: int) -> int:
    try:
        return int(str(text).strip())
    except (TypeError, ValueError):
        return default


# -- client side ------------------------------------------------------------------

CLIENT_SESSIONS = SessionCache()
POOL_PASSWORD_USER = "condor_pool"      # who the pool password authenticates as (HTCondor's PASSWORD)
PASSWORD_TOKEN_LIFETIME = 300           # seconds the token a pool password signs is good for


def _reply(sock) -> dict:
    message = ipc.recv_message(sock, HANDSHAKE_LIMIT)
    if not isinstance(message, dict):
        raise AuthenticationFailed("bad handshake reply from the server")
    if "err" in message:
        ipc._raise_remote(*message["err"])
    return message


def client_handshake(sock, endpoint: str, target: str, get: Lookup, token: str | None = None,
                     tag: str = "", password: bytes | None = None) -> dict:
    """Authenticate to the server on ``sock`` (reached as ``endpoint``) for daemon
    ``target``; the session's info (user, session id, authz, lease).  Sessions are
    cached under ``tag`` (``SecMan.setTag``: another tag never reuses them).  With no
    ``token`` given, a ``password`` (``SecMan.setPoolPassword``: the pool's password,
    whose doubled bytes are the POOL signing key) authenticates as HTCondor's PASSWORD
    method does, as ``condor_pool@<trust domain>``, by a short-lived token it signs."""
    hello = _reply(sock).get("hello")
    if not isinstance(hello, dict):
        raise AuthenticationFailed(f"{endpoint} did not start the handshake")
    issuer = str(hello.get("issuer", ""))
    keys = [k for k in hello.get("keys", []) if isinstance(k, str)]
    credential = token or (f"password:{hashlib.sha256(password).hexdigest()}" if password else "")
    cache_key = f"{tag}|{endpoint}|{issuer}|{credential}"
    cached = CLIENT_SESSIONS.get(cache_key)
    if cached is not None:
        ipc.send_message(sock, {"resume": cached.sid, "target": target,
                                "mac": _b64(_mac(cached.key, cached.sid.encode()))})
        reply = _reply(sock)
        if "ok" in reply:
            return dict(reply["ok"], resumed=True)
        CLIENT_SESSIONS.drop(cache_key)
    if token is None and password:
        token = idtokens.create_token(f"{POOL_PASSWORD_USER}@{issuer}", issuer, password + password,
                                      lifetime=PASSWORD_TOKEN_LIFETIME)
    try:
        chosen = token or _find_token(get, issuer, keys, endpoint)
    except AuthenticationFailed:
        if not ALLOW_ANONYMOUS.get():
            raise
        ipc.send_message(sock, {"auth": "ANONYMOUS", "target": target})
        return dict(_reply(sock)["ok"], resumed=False)
    parsed = idtokens.parse(chosen)
    identity = parsed.identity
    ra = secrets.token_bytes(NONCE)
    ipc.send_message(sock, {"auth": "IDTOKENS", "token": parsed.signing_input, "ra": _b64(ra),
                            "target": target})
    challenge = _reply(sock)
    assert parsed.signature is not None
    ka, kb = derive(parsed.signature, parsed.signing_input)
    rb = _unb64(challenge.get("rb"), "rb")
    server = str(challenge.get("server", ""))
    expected = _mac(ka, server.encode(), identity.encode(), ra, rb)
    if not hmac.compare_digest(_unb64(challenge.get("mac"), "mac"), expected):
        why = (f"{endpoint} could not prove it holds the key that signed the token of {identity} "
               f"(kid {parsed.kid}, issuer {parsed.issuer}): the token was signed by another key")
        try:
            ipc.send_message(sock, {"abort": why})
        except OSError:
            pass
        raise AuthenticationFailed(why, identity)
    ipc.send_message(sock, {"mac": _b64(_mac(ka, identity.encode(), rb))})
    info = _reply(sock)["ok"]
    lease = _int(info.get("lease"), 0)
    CLIENT_SESSIONS.put(cache_key, Session(str(info.get("session")), identity, info.get("authz"),
                                           _mac(kb, rb), time.monotonic() + max(0, lease - 5)))
    return dict(info, resumed=False)


def _find_token(get: Lookup, issuer: str, keys: list[str], endpoint: str) -> str:
    found = idtokens.find_token(get, issuer, keys)
    if found is not None:
        return found[0]
    # The pool's own user may hold the signing key itself: a short token for condor@ (as HTCondor's
    # client does when it can read the key the server names).
    if issuer and issuer == idtokens.trust_domain(get) and idtokens.POOL in keys:
        try:
            key = idtokens.read_signing_key(idtokens.POOL, get)
        except TokenError:
            key = b""
        if key:
            return idtokens.create_token(f"condor@{issuer}", issuer, key, lifetime=60)
    where = ", ".join(str(p) for p in idtokens.token_directories(get))
    raise AuthenticationFailed(f"no token for trust domain {issuer!r} (signing keys {', '.join(keys) or 'none'}) "
                               f"in {where}: {endpoint} requires IDTOKENS authentication")
