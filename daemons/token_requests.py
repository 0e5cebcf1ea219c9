"""Tokens the pool issues: requests an administrator approves, and tokens fetched.

As HTCondor's collector does (condor_token_request / _approve / _list, condor_token_fetch):

* ``request``: anyone, even a client with no token yet (an anonymous session of the
  shared port), asks for a token for an identity, limited to some levels and a
  lifetime; the request waits, known by a request id, until an administrator
  approves it.  The client proves it is the requester with a secret (``client_id``)
  only it and the collector know.
* ``approve`` / ``list``: ADMINISTRATOR (the pool's own user on this machine).
* ``result``: the requester polls; once approved it gets the signed token.
* ``fetch``: an authenticated identity gets a token for itself, never wider than the
  session it has (a token limited to READ fetches tokens limited to READ).

* ``auto_approve`` (condor_token_request_auto_approve, ADMINISTRATOR): for ``lifetime``
  seconds, requests from the network ``netblock`` are approved at once, as HTCondor's
  rules do it: only for the ``condor@`` identity, limited to ADVERTISE_SCHEDD /
  ADVERTISE_STARTD / ADVERTISE_MASTER (what a daemon asks for when the collector will
  not take its ads), made from 60 s before the rule until it expires; the pending
  requests it matches are approved when it is installed.  Rules live in memory.

Issued tokens last at most SEC_ISSUED_TOKEN_EXPIRATION seconds when that is set.
Pending requests are kept in memory (at most MAX_PENDING, each for REQUEST_LIFETIME
seconds): a restarted collector forgets them and the requester asks again.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
import threading
import time
from collections.abc import Callable

from jobledger.daemons import idtokens
from jobledger.daemons.authz import ANONYMOUS
from jobledger.eventcore.errors import HTCondorException, HTCondorValueError, PermissionDenied

MAX_PENDING = 1000
REQUEST_LIFETIME = 3600.0
AUTO_LEVELS = {"ADVERTISE_SCHEDD", "ADVERTISE_STARTD", "ADVERTISE_MASTER"}
MAX_RULES = 100
LEVELS = {"READ", "WRITE", "ADMINISTRATOR", "CONFIG", "DAEMON", "NEGOTIATOR",
          "ADVERTISE_STARTD", "ADVERTISE_SCHEDD", "ADVERTISE_MASTER"}


def _levels(authz) -> list[str]:
    if authz is None:
        return []
    if not isinstance(authz, list) or not all(isinstance(a, str) for a in authz):
        raise HTCondorValueError("authz must be a list of authorization levels")
    wrong = [a for a in authz if a.upper() not in LEVELS]
    if wrong:
        raise HTCondorValueError(f"unknown authorization level {wrong[0]!r}")
    return [a.upper() for a in authz]


class TokenRequests:
    def __init__(self, get: Callable[[str], "str | None"], local_identity: Callable[[dict], str]):
        self.get = get
        self.local_identity = local_identity
        self._pending: dict[str, dict] = {}
        self._rules: list[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, float, float]] = []
        self._lock = threading.Lock()

    def _identity(self, peer: dict) -> str:
        return str(peer.get("user") or self.local_identity(peer))

    def _lifetime(self, lifetime) -> int | None:
        if lifetime is not None and (isinstance(lifetime, bool) or not isinstance(lifetime, int)):
            raise HTCondorValueError("lifetime must be a number of seconds")
        limit = (self.get("SEC_ISSUED_TOKEN_EXPIRATION") or "").strip()
        if limit.lstrip("-").isdigit() and int(limit) >= 0:
            return int(limit) if lifetime is None or lifetime < 0 else min(lifetime, int(limit))
        return None if lifetime is None or lifetime < 0 else lifetime

    def _issue(self, identity: str, authz: list[str], lifetime: int | None) -> str:
        key = idtokens.read_signing_key(idtokens.POOL, self.get)
        return idtokens.create_token(identity, idtokens.trust_domain(self.get), key, idtokens.POOL,
                                     authz, lifetime)

    def _expire(self) -> None:
        now = time.monotonic()
        for reqid in [r for r, item in self._pending.items() if item["expires"] < now]:
            del self._pending[reqid]

    def request(self, peer: dict, identity: str, client_id: str, authz=None, lifetime=None) -> str:
        if identity == "" and peer.get("user", "x") != ANONYMOUS:
            identity = self._identity(peer)      # a token for whoever asks
        if not isinstance(identity, str) or "@" not in identity or any(c.isspace() for c in identity) \
                or len(identity) > 256:
            raise HTCondorValueError(f"identity {identity!r} is not user@domain")
        if not isinstance(client_id, str) or not 16 <= len(client_id) <= 128:
            raise HTCondorValueError("a token request needs a client id of 16 to 128 characters")
        levels = _levels(authz)
        with self._lock:
            self._expire()
            if len(self._pending) >= MAX_PENDING:
                raise HTCondorException(f"too many token requests are waiting ({MAX_PENDING}): try later")
            reqid = str(secrets.randbelow(9_000_000) + 1_000_000)
            while reqid in self._pending:
                reqid = str(secrets.randbelow(9_000_000) + 1_000_000)
            self._pending[reqid] = {
                "RequestId": reqid, "RequestedIdentity": identity, "LimitAuthorization": levels,
                "Lifetime": lifetime if isinstance(lifetime, int) else -1,
                "AuthenticatedIdentity": str(peer.get("user") or self.local_identity(peer)),
                "PeerLocation": str(peer.get("host") or "local"), "client_id": client_id,
                "expires": time.monotonic() + REQUEST_LIFETIME, "token": None, "made": time.time(),
            }
            if self._auto_rule(self._pending[reqid]) is not None:
                self._grant(self._pending[reqid])
        return reqid

    def _grant(self, item: dict) -> None:
        item["token"] = self._issue(item["RequestedIdentity"], item["LimitAuthorization"],
                                    self._lifetime(item["Lifetime"]))

    def _auto_rule(self, item: dict) -> str | None:
        """The text of the auto-approval rule that approves ``item``, or None."""
        levels = item["LimitAuthorization"]
        if not item["RequestedIdentity"].startswith("condor@") or not levels \
                or any(level not in AUTO_LEVELS for level in levels) or item["token"] is not None:
            return None
        try:
            where = ipaddress.ip_address(item["PeerLocation"])
        except ValueError:
            return None         # a request on this machine (no network address)
        now = time.time()
        self._rules = [rule for rule in self._rules if rule[2] >= now]
        for netblock, issued, expires in self._rules:
            if where.version == netblock.version and where in netblock and \
                    issued - 60 <= item["made"] <= expires:
                return f"[netblock = {netblock}; lifetime_left = {int(expires - now)}]"
        return None

    def auto_approve(self, peer: dict, netblock: str, lifetime: int) -> int:
        """Install a rule approving the requests it matches for ``lifetime`` seconds;
        the pending ones it matches now are approved at once (their number)."""
        if isinstance(lifetime, bool) or not isinstance(lifetime, int) or lifetime <= 0:
            raise HTCondorValueError("Auto-approval rule lifetimes must be greater than zero.")
        try:
            network = ipaddress.ip_network(str(netblock).strip(), strict=False)
        except ValueError:
            raise HTCondorValueError(f"Auto-approval rule netblock invalid: {netblock!r}") from None
        with self._lock:
            self._expire()
            now = time.time()
            self._rules = [rule for rule in self._rules if rule[2] >= now][-(MAX_RULES - 1):]
            self._rules.append((network, now, now + lifetime))
            matched = [item for item in self._pending.values() if self._auto_rule(item) is not None]
            for item in matched:
                self._grant(item)
        return len(matched)

    def result(self, peer: dict, request_id: str, client_id: str) -> str | None:
        """The token once approved; None while pending."""
        with self._lock:
            self._expire()
            item = self._pending.get(str(request_id))
            if item is None or not isinstance(client_id, str) or \
                    not hmac.compare_digest(item["client_id"], client_id):
                raise HTCondorException(f"no token request {request_id} from this client (expired, "
                                        "or the collector restarted): request again")
            token = item["token"]
            if token is not None:
                del self._pending[str(request_id)]
            return token

    def list(self, peer: dict, request_id: str | None = None) -> list[dict]:
        with self._lock:
            self._expire()
            return [{k: v for k, v in item.items() if k not in ("client_id", "expires", "token", "made")}
                    for reqid, item in sorted(self._pending.items())
                    if item["token"] is None and (request_id is None or reqid == str(request_id))]

    def approve(self, peer: dict, request_id: str) -> dict:
        with self._lock:
            self._expire()
            item = self._pending.get(str(request_id))
            if item is None or item["token"] is not None:
                raise HTCondorException(f"no pending token request {request_id}")
            self._grant(item)
            return {k: v for k, v in item.items() if k not in ("client_id", "expires", "token", "made")}

    def fetch(self, peer: dict, authz=None, lifetime=None) -> str:
        """A token for the caller's own identity, no wider than its session."""
        identity = self._identity(peer)
        levels = _levels(authz)
        bound = peer.get("scopes")
        if isinstance(bound, list):
            wider = [level for level in levels if level not in bound]
            if wider or not levels:
                levels = levels or list(bound)
                if wider:
                    raise PermissionDenied(identity, "token fetch", wider[0],
                                           f"its session is limited to {' '.join(bound) or 'nothing'}")
        return self._issue(identity, levels, self._lifetime(lifetime))
