"""``htcondor.Credd``, ``CredType``/``CredTypes``, ``CredCheck`` and v1's ``CredStatus``.

The credd (``daemons.credd``) keeps the credentials; these send them (base64 in the
command's message) and read back what is stored.  Argument checks and return values
are htcondor2's: an empty password or credential is a ``ValueError``, a credential
type a method does not take is a ``ValueError``; ``query_password`` answers a bool,
``query_user_cred`` the time the credential was stored (or None),
``query_user_service_cred`` the stored record in the old ClassAd syntax (or None).

``CredCheck``: htcondor2 25.x's own class fails when built (it calls an ``isURL`` it
never defines) and its ``present`` is ``bool(self)``, true only when a URL is needed,
the opposite of what its text says.  Here ``present`` is what the text says (nothing
is missing) and ``bool()`` is htcondor2's (a URL to visit was given).
"""

from __future__ import annotations

import base64
import enum
import re
import subprocess

from jobledger.daemons import ipc
from jobledger.daemons.client.located import Located
from jobledger.eventcore.classad import ClassAd
from jobledger.eventcore.enums import DaemonType
from jobledger.eventcore.errors import HTCondorException, HTCondorValueError

PRODUCER_TIMEOUT = 60.0
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


class CredType(enum.IntEnum):
    Password = 0x24
    Kerberos = 0x20
    OAuth = 0x28


CredTypes = CredType


class CredCheck:
    """What ``check_user_service_creds`` found: the services asked for, and a URL to
    visit to store the missing ones, or an error saying why there is none."""

    def __init__(self, services: str, url_or_error: str | None):
        self._services = services
        text = url_or_error or None
        self._url = text if text is not None and _URL.match(text) else None
        self._error = text if self._url is None else None

    def __str__(self) -> str:
        return self._url or self._error or self._services

    def __bool__(self) -> bool:
        return self._url is not None

    @property
    def present(self) -> bool:
        return self._url is None and self._error is None

    @property
    def url(self) -> str | None:
        return self._url

    @property
    def error(self) -> str | None:
        return self._error

    @property
    def services(self) -> str:
        return self._services


class CredStatus:
    """v1's answer of ``query_user_service_cred``: the stored record's text."""

    def __init__(self, text: str | None):
        self._text = text or ""

    def __str__(self) -> str:
        return self._text


def _kind(credtype, allowed: tuple) -> CredType:
    try:
        kind = CredType(int(credtype))
    except (TypeError, ValueError):
        raise HTCondorValueError("invalid credtype") from None
    if kind not in allowed:
        raise HTCondorValueError("invalid credtype")
    return kind


def _encoded(credential) -> str:
    if isinstance(credential, str):
        credential = credential.encode()
    if not isinstance(credential, (bytes, bytearray)):
        raise TypeError("credential must be bytes")
    if not credential:
        raise HTCondorValueError("credential may not be empty")
    return base64.b64encode(bytes(credential)).decode()


def _produced() -> bytes | None:
    """SEC_CREDENTIAL_PRODUCER's output (None: CREDENTIAL_ALREADY_STORED)."""
    from jobledger.daemons.config_files import param
    producer = param.get("SEC_CREDENTIAL_PRODUCER")
    if producer == "CREDENTIAL_ALREADY_STORED":
        return None
    if not producer:
        raise HTCondorException("No credential supplied but SEC_CREDENTIAL_PRODUCER not set.")
    try:
        done = subprocess.run(producer.split(), capture_output=True, timeout=PRODUCER_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise HTCondorException(f"SEC_CREDENTIAL_PRODUCER {producer!r} failed: {exc}") from None
    if done.returncode != 0 or not done.stdout:
        raise HTCondorException(f"SEC_CREDENTIAL_PRODUCER {producer!r} produced no credential "
                                f"(exit status {done.returncode})")
    return done.stdout


class Credd(Located):
    """The credd client (htcondor2.Credd)."""

    daemon_type = DaemonType.Credd

    def _call(self, op: str, kind: int, user=None, **args):
        if user is not None and not isinstance(user, str):
            raise TypeError("user must be a string")
        return ipc.call(self._addr, "store_cred", timeout=60, op=op, kind=int(kind), user=user, **args)

    # -- passwords -------------------------------------------------------------------
    def add_password(self, password: str, user: str | None = None) -> None:
        if not isinstance(password, str):
            raise TypeError("password must be a string")
        if len(password) == 0:
            raise HTCondorValueError("password may not be empty")
        self._call("add", CredType.Password, user, credential=_encoded(password))

    def delete_password(self, user: str | None = None) -> bool:
        return bool(self._call("delete", CredType.Password, user))

    def query_password(self, user: str | None = None) -> bool:
        return self._call("query", CredType.Password, user) is not None

    # -- user credentials ------------------------------------------------------------
    def add_user_cred(self, credtype, credential, user: str | None = None) -> None:
        kind = _kind(credtype, (CredType.Password, CredType.Kerberos))
        if credential is None:
            credential = _produced()
            if credential is None:
                return
        self._call("add", kind, user, credential=_encoded(credential))

    def delete_user_cred(self, credtype, user: str | None = None) -> None:
        self._call("delete", _kind(credtype, (CredType.Password, CredType.Kerberos)), user)

    def query_user_cred(self, credtype, user: str | None = None) -> int | None:
        kind = _kind(credtype, (CredType.Password, CredType.Kerberos, CredType.OAuth))
        return self._call("query", kind, user)

    # -- service credentials -------------------------------------------------------------
    def add_user_service_cred(self, credtype, credential, service: str, handle: str | None = None,
                              user: str | None = None, refresh: bool | None = None) -> None:
        _kind(credtype, (CredType.OAuth,))
        if credential is None:
            credential = _produced()
            if credential is None:
                return
        self._call("add", CredType.OAuth, user, credential=_encoded(credential), service=_name(service),
                   handle=_handle(handle), refresh=refresh)

    def delete_user_service_cred(self, credtype, service: str, handle: str | None = None,
                                 user: str | None = None) -> None:
        _kind(credtype, (CredType.OAuth,))
        self._call("delete", CredType.OAuth, user, service=_name(service), handle=_handle(handle))

    def query_user_service_cred(self, credtype, service: str, handle: str | None = None,
                                user: str | None = None) -> str | None:
        _kind(credtype, (CredType.OAuth,))
        found = self._call("query", CredType.OAuth, user, service=_name(service), handle=_handle(handle))
        if found is None:
            return None
        return "".join(f"{name} = {ClassAd({name: value}).lookup(name)}\n" for name, value in found.items())

    def check_user_service_creds(self, credtype, serviceAds: list, user: str | None = None) -> CredCheck:
        _kind(credtype, (CredType.OAuth,))
        pairs, names = [], []
        for ad in serviceAds:
            if not isinstance(ad, ClassAd):
                raise TypeError("service must be of type classad.ClassAd")
            service = ad.get("Service", None)
            if service is None:
                raise HTCondorValueError("request has no 'Service' attribute")
            handle = ad.get("Handle", None)
            pairs.append([str(service), str(handle) if handle else None])
            names.append(f"{service}*{handle}" if handle else str(service))
        if user is not None and not isinstance(user, str):
            raise TypeError("user must be a string")
        missing = ipc.call(self._addr, "check_services", timeout=60, services=pairs, user=user)
        if not missing:
            return CredCheck(",".join(names), None)
        return CredCheck(",".join(names), f"credentials for {', '.join(missing)} are not stored, and this "
                                          "pool has no credential monitor to fetch them: store them with "
                                          "Credd.add_user_service_cred or condor_store_cred")

    def get_oauth2_credential(self, service: str, handle: str | None, user: str | None = None) -> str:
        text = ipc.call(self._addr, "get_service_cred", timeout=60, service=_name(service),
                        handle=_handle(handle), user=user)
        return base64.b64decode(text).decode("utf-8", errors="replace")


def _name(service) -> str:
    if not isinstance(service, str) or not service:
        raise TypeError("service must be a non-empty string")
    return service


def _handle(handle) -> str | None:
    if handle is None or handle == "":
        return None
    if not isinstance(handle, str):
        raise TypeError("handle must be a string")
    return handle
