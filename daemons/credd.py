"""condor_credd's job: keep users' passwords and credentials, owner-only, and say what is stored.

Run it by naming CREDD in DAEMON_LIST.  The commands (``htcondor.Credd``,
``condor_store_cred``) add, delete and query a user's password, Kerberos
credential or OAuth service credentials in the credential directory
(``daemons.credentials``), and check which of a job's services are missing.  The
log says what was done for whom, never a credential's bytes; the credentials
travel in the command's message only (the pool's sockets are its owner's alone).
"""

from __future__ import annotations

import base64
import binascii
import pwd

from jobledger.daemons.credentials import OAUTH, PASSWORD, KERBEROS, CredentialError, Store, directories
from jobledger.daemons.daemon import Daemon, main_for

KINDS = {PASSWORD: "password", KERBEROS: "Kerberos credential", OAUTH: "OAuth credential"}


class Credd(Daemon):
    name = "credd"
    log_name = "CreddLog"

    def __init__(self, config_file: str | None = None):
        super().__init__(config_file)
        self.store = Store(*directories(self.config))
        self.domain = self.config("UID_DOMAIN", "") or self.host

    def ads(self) -> list[dict]:
        ad = self.common_ad("CredD")
        ad["CredDIpAddr"] = ad["MyAddress"]
        return [ad]

    def handlers(self) -> dict:
        handlers = super().handlers()
        handlers.update({"store_cred": self._store_cred, "check_services": self._check_services,
                         "get_service_cred": self._get_service_cred})
        return handlers

    def _user(self, peer, user: str | None) -> str:
        return whose(peer, user, self.domain)

    def _store_cred(self, peer, op: str, kind: int, user: str | None = None, credential: str | None = None,
                    service: str | None = None, handle: str | None = None, refresh: bool | None = None):
        """``op`` add | delete | query of a ``kind`` (CredType) credential; the answer is
        True/False (add, delete: done / was there), or what query finds (None: nothing)."""
        user = self._user(peer, user)
        if kind not in KINDS:
            raise CredentialError(f"invalid credential type {kind}")
        if kind == OAUTH and op != "query" and not service:
            raise CredentialError("an OAuth credential needs a service name")
        if op == "add":
            data = _decode(credential)
            if kind == OAUTH:
                self.store.add_service(user, str(service), handle, data, refresh)
            else:
                self.store.add(kind, user, data)
            self.log.info("stored the %s of %s%s", KINDS[kind], user, _for(service, handle))
            return True
        if op == "delete":
            found = (self.store.delete_service(user, str(service), handle) if kind == OAUTH
                     else self.store.delete(kind, user))
            self.log.info("deleted the %s of %s%s (%s)", KINDS[kind], user, _for(service, handle),
                          "was stored" if found else "none was stored")
            return found
        if op == "query":
            if kind == OAUTH:
                return self.store.query_service(user, str(service), handle) if service else None
            return self.store.query(kind, user)
        raise CredentialError(f"unknown credential operation {op!r}")

    def _check_services(self, peer, services: list, user: str | None = None) -> list[str]:
        """The ``[service, handle]`` pairs of ``services`` with no credential stored."""
        user = self._user(peer, user)
        pairs = [(str(s), str(h) if h else None) for s, h in services]
        return self.store.missing_services(user, pairs)

    def _get_service_cred(self, peer, service: str, handle: str | None = None, user: str | None = None) -> str:
        """The stored token of a service (base64): what get_oauth2_credential returns."""
        user = self._user(peer, user)
        top, use = self.store.service_paths(user, service, handle)
        for path in (use, top):
            if path.exists():
                from jobledger.daemons.credentials import read_private
                return base64.b64encode(read_private(path)).decode()
        raise CredentialError(f"no {service} credential of {user} is stored")


def whose(peer: dict, user: str | None, domain: str) -> str:
    """Whose credential: ``user``, by default the caller.  A caller the pool's port
    authenticated (``peer["user"]``) who is not a super user may name only itself."""
    caller = peer.get("user")
    if user is None:
        user = str(caller) if caller else f"{pwd.getpwuid(peer['uid']).pw_name}@{domain}"
    if not isinstance(user, str) or "@" not in user:
        raise CredentialError(f"user {user!r} is not of the form: account@domain")
    if caller and not peer.get("super") and user.partition("@")[0] != str(caller).partition("@")[0]:
        raise CredentialError(f"{caller} may not reach the credentials of {user}")
    return user


def _decode(text: str | None) -> bytes:
    if not isinstance(text, str):
        raise CredentialError("credential may not be empty")
    try:
        return base64.b64decode(text.encode(), validate=True)
    except (binascii.Error, ValueError):
        raise CredentialError("the credential was not sent as base64") from None


def _for(service: str | None, handle: str | None) -> str:
    return f" for {service}" + (f" ({handle})" if handle else "") if service else ""


if __name__ == "__main__":
    main_for(Credd)
