"""``htcondor.SecMan`` and ``htcondor.ping``: how a command of ours would be authorized.

On this machine the pool's daemons take a connection only from their own uid
(``daemons/ipc.py``, SO_PEERCRED): ``ping`` reports it as HTCondor would a session
authenticated by the file system (``FS``), with no encryption or integrity (the
socket never leaves the machine).  Over the network (a pool's shared port) the
session is TLS with IDTOKENS: ``ping`` reports the identity the pool took us for,
the cipher, and whether the level asked for is granted (``PermissionDenied`` if
not); the session is the one cached for the next command.
"""

from __future__ import annotations

import itertools
import os
import socket
import time

from jobledger.daemons import ipc
from jobledger.daemons.config_files import param
from jobledger.eventcore.classad import ClassAd
from jobledger.eventcore.errors import HTCondorException, HTCondorIOError, HTCondorValueError

# condor_commands.h: DaemonCore's commands, and the authorization levels condor_ping
# takes as names (each checked with DC_NOP_<LEVEL>, DC_BASE+20...).
COMMANDS = {
    "DC_NOP": 60011, "DC_RECONFIG": 60004, "DC_OFF_GRACEFUL": 60005, "DC_OFF_FAST": 60006,
    "DC_CONFIG_VAL": 60007, "DC_RECONFIG_FULL": 60012, "DC_OFF_PEACEFUL": 60015,
    "DC_NOP_READ": 60020, "DC_NOP_WRITE": 60021, "DC_NOP_NEGOTIATOR": 60022, "DC_NOP_ADMINISTRATOR": 60023,
    "DC_NOP_OWNER": 60024, "DC_NOP_CONFIG": 60025, "DC_NOP_DAEMON": 60026, "DC_NOP_ADVERTISE_STARTD": 60027,
    "DC_NOP_ADVERTISE_SCHEDD": 60028, "DC_NOP_ADVERTISE_MASTER": 60029,
}
LEVELS = {"READ", "WRITE", "NEGOTIATOR", "ADMINISTRATOR", "OWNER", "CONFIG", "DAEMON",
          "ADVERTISE_STARTD", "ADVERTISE_SCHEDD", "ADVERTISE_MASTER"}
_session = itertools.count(1)


def command_number(command) -> int:
    """``command`` (a number, a DaemonCore command name or an authorization level) as a number."""
    if isinstance(command, int) and not isinstance(command, bool):
        return command
    if not isinstance(command, str):
        raise TypeError("command must be a string or an int")
    name = command.strip().upper()
    if name in LEVELS:
        name = f"DC_NOP_{name}"
    if name not in COMMANDS:
        raise HTCondorValueError(f"Unknown command name: {command}")
    return COMMANDS[name]


def _address(ad) -> str:
    if isinstance(ad, ClassAd):
        address = ad.get("MyAddress")
        if not isinstance(address, str):
            raise HTCondorValueError("Address not available in location ClassAd.")
        return address
    if isinstance(ad, str):
        return ad
    raise TypeError("ad must be a location ClassAd or an address string")


def _remote_user() -> str:
    import pwd
    try:
        user = pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        user = f"uid{os.getuid()}"
    try:
        domain = param["UID_DOMAIN"]
    except KeyError:
        domain = socket.getfqdn()
    return f"{user}@{domain}"


def _level_of(command) -> str | None:
    """The authorization level a ping asks about (None: DC_NOP, any authenticated peer)."""
    if isinstance(command, str) and command.strip().upper() in LEVELS:
        return command.strip().upper()
    number = command_number(command)
    for name, value in COMMANDS.items():
        if value == number and name.startswith("DC_NOP_"):
            return name[len("DC_NOP_"):]
    return None


def ping_ad(location, command="DC_NOP") -> ClassAd:
    """The authorization ad of ``command`` at the daemon ``location`` locates."""
    number = command_number(command)
    level = _level_of(command)
    address = _address(location)
    try:
        sock = ipc.connect(address, 20)
        try:   # a daemon's own ping takes no arguments; the shared port's checks the level
            networked = hasattr(sock, "auth_info")
            ipc.send_message(sock, {"cmd": "ping", "args": {"authz": level} if level and networked else {}})
            reply = ipc.recv_message(sock)
        finally:
            sock.close()
    except HTCondorException as exc:
        if type(exc).__name__ in ("PermissionDenied", "AuthenticationFailed"):
            raise   # typed (an AuthenticationFailed is an OSError too: caught here first)
        raise HTCondorIOError(f"Failed to ping {address}: {exc}") from exc
    except (OSError, ValueError) as exc:
        raise HTCondorIOError(f"Failed to ping {address}: {exc}") from exc
    if "err" in reply:
        ipc._raise_remote(*reply["err"])
    answer = reply.get("ok") or {}
    from jobledger.daemons.daemon import VERSION
    lease = int(param.get("SEC_DEFAULT_SESSION_LEASE", 3600))
    info = getattr(sock, "auth_info", None)
    ad = {
        "AuthCommand": number, "Command": number,
        "AuthMethods": "FS", "Authentication": "YES", "TriedAuthentication": True,
        "Encryption": "NO", "Integrity": "NO", "CryptoMethods": "",
        "MyRemoteUserName": _remote_user(), "User": _remote_user(),
        "RemoteVersion": VERSION,
        "SessionDuration": str(int(param.get("SEC_DEFAULT_SESSION_DURATION", 86400))),
        "SessionLease": lease,
        "Sid": f"{socket.gethostname()}:{answer.get('pid', 0)}:{int(time.time())}:{next(_session)}",
    }
    if info is not None:      # over the network: TLS and a token
        ad.update({"AuthMethods": "IDTOKENS", "Encryption": "YES", "Integrity": "YES",
                   "CryptoMethods": str(info.get("encryption", "")), "MyRemoteUserName": info["user"],
                   "User": info["user"], "Sid": str(info.get("session", "")),
                   "SessionLease": int(info.get("lease", lease))})
    # the daemon answered the command (DC_NOP itself, or the level's DC_NOP_*): authorized, as
    # HTCondor's ping ad says for each, DC_NOP included (HTCondor's own ping test reads it for 60011)
    ad["AuthorizationSucceeded"] = True
    return ClassAd(ad)


def ping(location, authz=None, security=None) -> ClassAd:
    """htcondor2.ping: ask the daemon at ``location`` whether ``authz`` (a level or a
    command name; None: DC_NOP) would be authorized; with ``security`` (a
    ``SecurityContext``) its token is preferred over the token files."""
    from jobledger.daemons import netclient
    token = getattr(security, "preferred_token", None) if security is not None else None
    reset = netclient.PREFERRED_TOKEN.set(token) if token else None
    try:
        return ping_ad(location, authz if authz is not None else "DC_NOP")
    finally:
        if reset is not None:
            netclient.PREFERRED_TOKEN.reset(reset)


class SecurityContext:
    """htcondor2.SecurityContext: a token (by value) to prefer when authenticating."""

    def __init__(self, token: str | None = None):
        if token is not None and not isinstance(token, str):
            raise TypeError("token must be a string")
        self.preferred_token = token


class SecMan:
    """v1's security manager: ``ping`` a daemon; ``setToken`` prefers a token over the
    token files; sessions over the network are cached until ``invalidateAllSessions``."""

    def __enter__(self) -> "SecMan":
        from jobledger.daemons import netclient
        self._saved = (netclient.SESSION_TAG.get(), netclient.POOL_PASSWORD.get())
        return self

    def __exit__(self, *exc) -> None:
        """Leaving the ``with`` block: the tag and pool password set inside it are undone."""
        from jobledger.daemons import netclient
        saved = getattr(self, "_saved", None)
        if saved is not None:
            netclient.SESSION_TAG.set(saved[0])
            netclient.POOL_PASSWORD.set(saved[1])
        self.invalidateAllSessions()

    def setTag(self, tag: str) -> None:
        """Sessions this thread negotiates from now on are kept under ``tag`` and used only
        while that tag is set (a thread with another tag authenticates afresh)."""
        from jobledger.daemons import netclient
        if not isinstance(tag, str):
            raise TypeError("tag must be a string")
        netclient.SESSION_TAG.set(tag)

    def setPoolPassword(self, new_pass: str) -> None:
        """The pool password for this thread's new negotiations: with no token preferred
        (``setToken``), it authenticates as ``condor_pool@<trust domain>``, as HTCondor's
        PASSWORD method does (the pool's signing key is made of the same password).
        An empty password stops using it."""
        from jobledger.daemons import netclient
        if isinstance(new_pass, bytes):
            new_pass = new_pass.decode("utf-8", "surrogateescape")
        if not isinstance(new_pass, str):
            raise TypeError("new_pass must be a string")
        netclient.POOL_PASSWORD.set(new_pass.encode("utf-8", "surrogateescape") or None)

    def invalidateAllSessions(self) -> None:
        """Forget the cached network sessions: the next command authenticates afresh."""
        from jobledger.daemons import netclient
        netclient.forget_sessions()

    def ping(self, ad, command="DC_NOP") -> ClassAd:
        """The authorization ad of ``command`` at the daemon ``ad`` locates (a ClassAd
        with ``MyAddress``, or the address); ``HTCondorIOError`` when it cannot be reached."""
        return ping_ad(ad, command)

    def getCommandString(self, command: int) -> str:
        """The DaemonCore name of command number ``command``."""
        for name, value in COMMANDS.items():
            if value == command:
                return name
        raise HTCondorValueError(f"Unknown command number: {command}")

    def setToken(self, token) -> None:
        """Prefer ``token`` (a ``Token`` or its text) over the token files in this process."""
        from jobledger.daemons import netclient
        text = getattr(token, "contents", token)
        if not isinstance(text, str):
            raise TypeError("token must be a Token or a string")
        netclient.set_process_token(text)

    def setConfig(self, key: str, value: str) -> None:
        """Set a security knob for this process's connections (``param``)."""
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError("key and value must be strings")
        param[key] = value


class Token:
    """An IDTOKEN (v1 ``htcondor.Token``): ``Token(contents)``; ``write`` puts it in the
    token directory (SEC_TOKEN_DIRECTORY, default ``~/.condor/tokens.d``)."""

    def __init__(self, contents: str):
        from jobledger.daemons import idtokens
        if not isinstance(contents, str):
            raise TypeError("contents must be a string")
        self._parsed = idtokens.parse(contents)
        self.contents = contents.strip()

    def __repr__(self) -> str:
        return f"<Token for {self._parsed.identity} (issuer {self._parsed.issuer})>"

    def write(self, tokenfile: str | None = None, overwrite: bool = False) -> str:
        """Write the token to ``tokenfile`` in the token directory (default: a name from
        its ``jti``), mode 0600; ``HTCondorIOError`` if it exists and not ``overwrite``."""
        import os
        from jobledger.daemons import idtokens, netclient
        name = tokenfile or f"token_{self._parsed.claims.get('jti') or 'unnamed'}"
        if "/" in name or name in (".", ".."):
            raise HTCondorValueError(f"token file name {name!r} must be a plain file name")
        directory = idtokens.token_directories(netclient.lookup)[0]
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = directory / name
        flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | (os.O_TRUNC if overwrite else os.O_EXCL)
        try:
            fd = os.open(path, flags, 0o600)
        except FileExistsError:
            raise HTCondorIOError(f"token file {path} already exists") from None
        with os.fdopen(fd, "w") as handle:
            handle.write(self.contents + "\n")
        return str(path)


class TokenRequest:
    """v1 ``htcondor.TokenRequest``: ask the pool for a token an administrator approves.

    ``TokenRequest(identity="", bounding_set=None, lifetime=-1)``; ``submit(ad=None)``
    sends it to the collector (``ad``: a daemon's location ad; with no token yet the
    connection is anonymous); ``request_id`` is what the administrator approves
    (``condor_token_request_approve -reqid``); ``done`` asks once whether it was
    approved; ``result(timeout=0)`` waits for the token (0: until it comes)."""

    def __init__(self, identity: str = "", bounding_set=None, lifetime: int = -1):
        if not isinstance(identity, str):
            raise TypeError("identity must be a string")
        if bounding_set is not None and (isinstance(bounding_set, str) or
                                         not all(isinstance(a, str) for a in bounding_set)):
            raise TypeError("bounding_set must be a list of authorization levels")
        self.identity = identity
        self.bounding_set = list(bounding_set or [])
        self.lifetime = int(lifetime)
        self.request_id: str | None = None
        self._address: str | None = None
        self._client_id = ""
        self._token: Token | None = None

    def _call(self, cmd: str, **args):
        from jobledger.daemons import netauth
        reset = netauth.ALLOW_ANONYMOUS.set(True)
        try:
            return ipc.call(self._address or "", cmd, timeout=30, **args)
        finally:
            netauth.ALLOW_ANONYMOUS.reset(reset)

    def submit(self, ad=None) -> None:
        import secrets
        from jobledger.daemons.config_files import collector_address
        if self.request_id is not None:
            raise HTCondorIOError("this token request was already submitted")
        self._address = _address(ad) if ad is not None else collector_address(param.get)
        if not self._address:
            raise HTCondorIOError("no collector to send the token request to (COLLECTOR_HOST)")
        self._client_id = secrets.token_hex(16)
        self.request_id = str(self._call("token_request", identity=self.identity, client_id=self._client_id,
                                         authz=self.bounding_set, lifetime=self.lifetime))

    @property
    def done(self) -> bool:
        if self._token is not None:
            return True
        if self.request_id is None:
            raise HTCondorIOError("the token request has not been submitted")
        text = self._call("token_request_result", request_id=self.request_id, client_id=self._client_id)
        if text:
            self._token = Token(text)
        return self._token is not None

    def result(self, timeout: int = 0) -> "Token":
        deadline = time.monotonic() + timeout if timeout > 0 else None
        while not self.done:
            if deadline is not None and time.monotonic() >= deadline:
                raise HTCondorIOError(f"token request {self.request_id} was not approved within {timeout} s")
            time.sleep(1.0)
        assert self._token is not None
        return self._token
