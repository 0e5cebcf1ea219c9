"""Users' credentials on disk, owner-only: what the credd stores and a starter hands a job.

Under ``SEC_CREDENTIAL_DIRECTORY_KRB`` / ``SEC_CREDENTIAL_DIRECTORY_OAUTH`` (both default
to ``SEC_CREDENTIAL_DIRECTORY``, else ``$(LOCAL_DIR)/cred_dir``), as HTCondor lays them out:

* ``<user>.pwd``  a user's password (``CredType.Password``, and the legacy password);
* ``<user>.cred`` a user's Kerberos credential (``CredType.Kerberos``);
* ``<user>/<service>.top`` an OAuth refresh token, ``<user>/<service>.use`` an access
  token (``<service>_<handle>`` with a handle), with ``.meta`` beside it.

Directories are mode 0700 and files 0600, written through a temporary file renamed
over the old one; a name that is not a plain file name (``/``, ``..``, NUL, empty,
over ``MAX_NAME``) is refused, as is a credential over ``MAX_CREDENTIAL`` bytes.
Nothing here logs a credential's bytes, and no credential goes to the journal: a
job names the services it needs (``OAuthServicesNeeded``, ``SendCredential``) and
its starter copies them from here into ``<sandbox>/.condor_creds`` (mode 0700),
named by ``_CONDOR_CREDS`` in the job's environment.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

from jobledger.eventcore.errors import HTCondorException

MAX_CREDENTIAL = 1 << 20        # bytes
MAX_NAME = 128
CREDS_DIR = ".condor_creds"
PASSWORD, KERBEROS, OAUTH = 0x24, 0x20, 0x28      # HTCondor's CredType values
_NAME = re.compile(r"^[A-Za-z0-9_.+-]+$")


class CredentialError(HTCondorException):
    """A credential that cannot be stored, found or given (the text names it, not its bytes)."""


def directories(config) -> tuple[Path, Path]:
    """(Kerberos/password directory, OAuth directory) from ``config(name, default)``."""
    base = config("SEC_CREDENTIAL_DIRECTORY", "") or os.path.join(config("LOCAL_DIR", "."), "cred_dir")
    return (Path(config("SEC_CREDENTIAL_DIRECTORY_KRB", "") or base),
            Path(config("SEC_CREDENTIAL_DIRECTORY_OAUTH", "") or base))


def plain(name: str, what: str) -> str:
    if not isinstance(name, str) or not name or len(name) > MAX_NAME or not _NAME.match(name) \
            or name in (".", ".."):
        raise CredentialError(f"invalid {what} name {name[:MAX_NAME] if isinstance(name, str) else name!r}")
    return name


def user_part(user: str) -> str:
    """``alice`` of ``alice@domain``."""
    return plain(user.split("@", 1)[0], "user")


def service_file(service: str, handle: str | None) -> str:
    name = plain(service, "service")
    return f"{name}_{plain(handle, 'handle')}" if handle else name


class Store:
    def __init__(self, krb_dir: Path, oauth_dir: Path):
        self.krb_dir = Path(krb_dir)
        self.oauth_dir = Path(oauth_dir)

    # -- paths ------------------------------------------------------------------------
    def user_path(self, kind: int, user: str) -> Path:
        suffix = {PASSWORD: ".pwd", KERBEROS: ".cred"}.get(kind)
        if suffix is None:
            raise CredentialError(f"invalid credential type {kind}")
        return self.krb_dir / f"{user_part(user)}{suffix}"

    def service_paths(self, user: str, service: str, handle: str | None) -> tuple[Path, Path]:
        """(refresh token, access token) files of a service credential."""
        stem = self.oauth_dir / user_part(user) / service_file(service, handle)
        return stem.with_name(stem.name + ".top"), stem.with_name(stem.name + ".use")

    # -- add / delete / query -----------------------------------------------------------
    def add(self, kind: int, user: str, credential: bytes) -> None:
        write_private(self.user_path(kind, user), _bytes(credential))

    def delete(self, kind: int, user: str) -> bool:
        return _remove(self.user_path(kind, user))

    def query(self, kind: int, user: str) -> int | None:
        """When the credential was stored (Unix time), or None."""
        try:
            return int(self.user_path(kind, user).stat().st_mtime)
        except FileNotFoundError:
            return None

    def add_service(self, user: str, service: str, handle: str | None, credential: bytes,
                    refresh: bool | None) -> None:
        data = _bytes(credential)
        if refresh is None:      # the credd decides: a JSON token with a refresh_token is one
            refresh = _is_refresh(data)
        top, use = self.service_paths(user, service, handle)
        write_private(top if refresh else use, data)
        _remove(use if refresh else top)
        meta = {"service": service, "handle": handle or "", "refresh": bool(refresh), "stored": int(time.time())}
        write_private(top.with_suffix(".meta"), json.dumps(meta).encode())

    def delete_service(self, user: str, service: str, handle: str | None) -> bool:
        top, use = self.service_paths(user, service, handle)
        found = [_remove(path) for path in (top, use, top.with_suffix(".meta"))]
        return any(found[:2])

    def query_service(self, user: str, service: str, handle: str | None) -> dict | None:
        top, use = self.service_paths(user, service, handle)
        for path, refresh in ((use, False), (top, True)):
            try:
                stored = int(path.stat().st_mtime)
            except FileNotFoundError:
                continue
            return {"Service": service, "Handle": handle or "", "IsRefresh": refresh, "Time": stored,
                    "Name": path.name}
        return None

    def missing_services(self, user: str, services: list[tuple[str, str | None]]) -> list[str]:
        """Of ``(service, handle)``, those with no credential stored (``service*handle``)."""
        return [f"{s}*{h}" if h else s for s, h in services if self.query_service(user, s, h) is None]

    # -- a job's sandbox ----------------------------------------------------------------
    def install(self, user: str, services: list[tuple[str, str | None]], kerberos: bool, sandbox: str,
                owner: tuple[int, int] | None = None) -> str:
        """Copy the job's credentials into ``<sandbox>/.condor_creds``; its path.
        ``CredentialError`` names what is missing."""
        wanted: list[tuple[Path, str]] = []
        for service, handle in services:
            top, use = self.service_paths(user, service, handle)
            source = use if use.exists() else top
            if not source.exists():
                raise CredentialError(f"the {service_file(service, handle)} credential of {user} is not stored")
            wanted.append((source, f"{service_file(service, handle)}.use"))
        if kerberos:
            source = self.user_path(KERBEROS, user)
            if not source.exists():
                raise CredentialError(f"no Kerberos credential of {user} is stored")
            wanted.append((source, f"{user_part(user)}.cred"))
        target = Path(sandbox) / CREDS_DIR
        target.mkdir(mode=0o700, exist_ok=True)
        os.chmod(target, 0o700)
        for source, name in wanted:
            write_private(target / name, read_private(source))
        if owner is not None:
            for path in [target, *(target / name for _, name in wanted)]:
                os.chown(path, owner[0], owner[1])
        return str(target)


def services_of(text) -> list[tuple[str, str | None]]:
    """``OAuthServicesNeeded`` ("box,drive*work") as [(service, handle)]."""
    if not isinstance(text, str):
        return []
    out = []
    for item in re.split(r"[\s,]+", text.strip()):
        if item:
            service, _, handle = item.partition("*")
            out.append((service, handle or None))
    return out


def write_private(path: Path, data: bytes) -> None:
    """``data`` at ``path``, mode 0600 in a 0700 directory, whole or not at all."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temp, path)


def read_private(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        return os.read(fd, MAX_CREDENTIAL + 1)[:MAX_CREDENTIAL]
    finally:
        os.close(fd)


def _remove(path: Path) -> bool:
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    return True


def _bytes(credential) -> bytes:
    if isinstance(credential, str):
        credential = credential.encode()
    if not isinstance(credential, (bytes, bytearray)) or not credential:
        raise CredentialError("credential may not be empty")
    if len(credential) > MAX_CREDENTIAL:
        raise CredentialError(f"a credential of {len(credential)} bytes is over the limit of {MAX_CREDENTIAL}")
    return bytes(credential)


def _is_refresh(data: bytes) -> bool:
    try:
        parsed = json.loads(data)
    except ValueError:
        return False
    return isinstance(parsed, dict) and "refresh_token" in parsed
