"""condor_token_create and condor_token_list: IDTOKENS as HTCondor's tools make and show them.

``condor_token_create -identity user@domain [-key NAME] [-authz LEVEL ...]
[-lifetime SECONDS] [-token FILE]`` signs a token with the pool's signing key
(``SEC_TOKEN_POOL_SIGNING_KEY_FILE``, or ``SEC_PASSWORD_DIRECTORY/NAME`` for
``-key NAME``) for the trust domain TRUST_DOMAIN; it goes to stdout, or with
``-token`` into a new file of that name in SEC_TOKEN_DIRECTORY (mode 0600).

``condor_token_list`` prints each token found in the token directory as HTCondor
does: ``Header: {...} Payload: {...} File: /path``.
"""

from __future__ import annotations

import base64
import os
import sys
from pathlib import Path

from jobledger.daemons import idtokens
from jobledger.daemons.config_files import param
from jobledger.eventcore.errors import HTCondorException, TokenError

from jobledger.condor_cli.args import Args, Failed, Help, Usage, entry

CREATE_USAGE = """\
Usage: condor_token_create -identity USER@DOMAIN [-key KEYID] [-authz AUTHZ ...] [-lifetime SECONDS] [-token NAME]

Generates a new token signed with a pool signing key.

    -identity USER@DOMAIN   the identity the token authenticates as
    -key KEYID              the signing key (default POOL: SEC_TOKEN_POOL_SIGNING_KEY_FILE)
    -authz AUTHZ            limit the token to an authorization level (READ, WRITE, ...); repeatable
    -lifetime SECONDS       the token expires SECONDS after it is made (default: never)
    -token NAME             write the token to NAME in SEC_TOKEN_DIRECTORY instead of stdout
"""

LIST_USAGE = """\
Usage: condor_token_list

Lists the tokens in the token directory (SEC_TOKEN_DIRECTORY).
"""

LEVELS = {"READ", "WRITE", "ADMINISTRATOR", "CONFIG", "DAEMON", "NEGOTIATOR", "OWNER",
          "ADVERTISE_STARTD", "ADVERTISE_SCHEDD", "ADVERTISE_MASTER", "ALLOW"}


def lookup(name: str) -> str | None:
    """A configuration value as text (None when undefined or empty)."""
    value = param.get(name)
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def write_token_file(name: str, token: str) -> Path:
    """``token`` in a new file ``name`` of the first token directory (mode 0600)."""
    if not name or "/" in name or name in (".", ".."):
        raise Failed(f"condor_token_create: token name {name!r} must be a plain file name")
    directory = idtokens.token_directories(lookup)[0]
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = directory / name
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        raise Failed(f"condor_token_create: {path} already exists; not overwriting it") from None
    with os.fdopen(fd, "w") as handle:
        handle.write(token + "\n")
    return path


def create(argv: list[str]) -> int:
    args = Args(argv, "condor_token_create")
    identity, kid, authz, lifetime, token_name = None, idtokens.POOL, [], None, None
    for _ in args:
        if args.flag("help", 1):
            raise Help()
        elif args.flag("identity", 1):
            identity = args.value("an identity")
        elif args.flag("keyid", 1) or args.flag("key", 1):
            kid = args.value("a key name")
        elif args.flag("authz", 1):
            level = args.value("an authorization level").strip().upper()
            if level not in LEVELS:
                raise Usage(f"condor_token_create: unknown authorization level {level!r}")
            authz.append(level)
        elif args.flag("lifetime", 1):
            lifetime = args.int_value()
        elif args.flag("token", 1):
            token_name = args.value("a token file name")
        elif args.flag("debug", 1):
            continue
        else:
            raise args.unknown()
    if not identity:
        raise Usage("condor_token_create: -identity is required")
    if "@" not in identity:
        identity = f"{identity}@{idtokens.trust_domain(lookup)}"
    issuer = idtokens.trust_domain(lookup)
    try:
        key = idtokens.read_signing_key(kid, lookup)
        token = idtokens.create_token(identity, issuer, key, kid, authz, lifetime)
    except TokenError as exc:
        raise Failed(f"Failed to create a token: {exc}", 2) from None
    if token_name is not None:
        write_token_file(token_name, token)
    else:
        print(token)
    return 0


def _segment(text: str) -> str:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode("utf-8", "replace")


def list_tokens(argv: list[str]) -> int:
    args = Args(argv, "condor_token_list")
    for _ in args:
        if args.flag("help", 1):
            raise Help()
        elif args.flag("debug", 1):
            continue
        else:
            raise args.unknown()
    for path in idtokens.token_files(lookup):
        for line in idtokens.tokens_in(path):
            try:
                idtokens.parse(line)
            except TokenError as exc:
                print(f"Token in {path} is not valid: {exc}", file=sys.stderr)
                continue
            head, body, _ = line.split(".")
            print(f"Header: {_segment(head)} Payload: {_segment(body)} File: {path}")
    return 0


REQUEST_USAGE = """\
Usage: condor_token_request [-identity USER@DOMAIN] [-authz AUTHZ ...] [-lifetime SECONDS] [-pool HOST:PORT] [-token NAME]

Asks the pool's collector for a token; an administrator approves it (condor_token_request_approve).
"""
APPROVE_USAGE = """\
Usage: condor_token_request_approve -reqid ID [-pool HOST:PORT] [-yes]

Approves a pending token request (after asking, unless -yes).
"""
REQUEST_LIST_USAGE = """\
Usage: condor_token_request_list [-reqid ID] [-pool HOST:PORT] [-json]

Lists the pending token requests.
"""
FETCH_USAGE = """\
Usage: condor_token_fetch [-authz AUTHZ ...] [-lifetime SECONDS] [-pool HOST:PORT] [-token NAME]

Gets a token for the identity this client authenticates as, no wider than its session.
"""
REQUEST_WAIT = 3600.0     # how long condor_token_request waits for the approval


def _collector_address(pool_name: str | None) -> str:
    from jobledger.condor_cli import pool
    from jobledger.daemons.config_files import collector_address
    pool.load_config()
    address = pool_name or collector_address(param.get)
    if not address:
        raise Failed("ERROR: no collector: give -pool HOST:PORT or set COLLECTOR_HOST")
    return address


def _common(args: Args, state: dict) -> bool:
    """The options the token tools share; True when the current argument was one."""
    if args.flag("help", 1):
        raise Help()
    if args.flag("pool", 1):
        state["pool"] = args.value("a pool")
    elif args.flag("authz", 1):
        level = args.value("an authorization level").strip().upper()
        if level not in LEVELS:
            raise Usage(f"{args.prog}: unknown authorization level {level!r}")
        state.setdefault("authz", []).append(level)
    elif args.flag("lifetime", 1):
        state["lifetime"] = args.int_value()
    elif args.flag("token", 1):
        state["token"] = args.value("a token file name")
    elif args.flag("debug", 1):
        pass
    else:
        return False
    return True


def _deliver(token: str, name: str | None) -> None:
    if name is not None:
        write_token_file(name, token)
    else:
        print(token)


def request(argv: list[str]) -> int:
    from jobledger.daemons.secman import TokenRequest
    args, state = Args(argv, "condor_token_request"), {}  # type: tuple[Args, dict]
    for _ in args:
        if _common(args, state):
            continue
        if args.flag("identity", 1):
            state["identity"] = args.value("an identity")
        else:
            raise args.unknown()
    ask = TokenRequest(str(state.get("identity", "")), state.get("authz"), int(state.get("lifetime", -1)))
    address = _collector_address(state.get("pool"))
    ask.submit(address)
    print(f"Token request enqueued.  Ask an administrator to please approve request {ask.request_id}.",
          file=sys.stderr, flush=True)
    _deliver(ask.result(int(REQUEST_WAIT)).contents, state.get("token"))
    return 0


def _call(address: str, cmd: str, **kw):
    from jobledger.daemons import ipc
    return ipc.call(address, cmd, timeout=30, **kw)


def approve(argv: list[str]) -> int:
    args, state, reqid, yes = Args(argv, "condor_token_request_approve"), {}, None, False  # type: tuple[Args, dict, str | None, bool]
    for _ in args:
        if _common(args, state):
            continue
        if args.flag("reqid", 1):
            reqid = args.value("a request id")
        elif args.flag("yes", 1):
            yes = True
        else:
            raise args.unknown()
    if reqid is None:
        raise Usage("condor_token_request_approve: -reqid is required")
    address = _collector_address(state.get("pool"))
    pending = _call(address, "token_request_list", request_id=reqid)
    if not pending:
        raise Failed(f"Request {reqid} is not pending.")
    item = pending[0]
    print(f"RequestedIdentity = \"{item['RequestedIdentity']}\"\n"
          f"AuthenticatedIdentity = \"{item['AuthenticatedIdentity']}\"\n"
          f"PeerLocation = \"{item['PeerLocation']}\"\n"
          f"LimitAuthorization = \"{','.join(item['LimitAuthorization'])}\"\n"
          f"RequestId = \"{reqid}\"")
    if not yes:
        print("To approve, please type 'yes'", flush=True)
        if sys.stdin.readline().strip().lower() != "yes":
            raise Failed("Request was NOT approved.")
    _call(address, "token_request_approve", request_id=reqid)
    print("Request approved successfully.")
    return 0


def request_list(argv: list[str]) -> int:
    import json
    args, state, reqid, as_json = Args(argv, "condor_token_request_list"), {}, None, False  # type: tuple[Args, dict, str | None, bool]
    for _ in args:
        if _common(args, state):
            continue
        if args.flag("reqid", 1):
            reqid = args.value("a request id")
        elif args.flag("json", 1):
            as_json = True
        else:
            raise args.unknown()
    items = _call(_collector_address(state.get("pool")), "token_request_list", request_id=reqid)
    if as_json:
        print(json.dumps(items, indent=2))
        return 0
    for item in items:
        print(f"RequestId = \"{item['RequestId']}\"\nRequestedIdentity = \"{item['RequestedIdentity']}\"\n"
              f"AuthenticatedIdentity = \"{item['AuthenticatedIdentity']}\"\n"
              f"PeerLocation = \"{item['PeerLocation']}\"\n"
              f"LimitAuthorization = \"{','.join(item['LimitAuthorization'])}\"\n")
    return 0


def fetch(argv: list[str]) -> int:
    args, state = Args(argv, "condor_token_fetch"), {}  # type: tuple[Args, dict]
    for _ in args:
        if not _common(args, state):
            raise args.unknown()
    token = _call(_collector_address(state.get("pool")), "token_fetch", authz=state.get("authz"),
                  lifetime=state.get("lifetime"))
    _deliver(token, state.get("token"))
    return 0


AUTO_APPROVE_USAGE = """\
Usage: condor_token_request_auto_approve [-type TYPE] [-name NAME] [-pool POOL] [-lifetime LIFETIME] [-netblock NETBLOCK]

Installs a rule at the collector that approves token requests at once.
    -netblock NETBLOCK      approve requests coming from this network (e.g. 192.168.0.0/24)
    -lifetime SECONDS       how long the rule lasts (default 3600)
    -pool HOST:PORT         the collector to install it at (default: this pool's)
Only requests for the condor@ identity limited to ADVERTISE_SCHEDD, ADVERTISE_STARTD or
ADVERTISE_MASTER (what a daemon asks for) are approved by a rule.
"""


def auto_approve(argv: list[str]) -> int:
    prog = "condor_token_request_auto_approve"
    args, state, netblock, lifetime = Args(argv, prog), {}, None, 3600  # type: tuple[Args, dict, str | None, int]
    for arg in args:
        if args.flag("help", 1):
            raise Help()
        if args.flag("lifetime", 1):
            text = args.value("an argument")
            try:
                lifetime = int(text)
            except ValueError:
                raise Failed(f"{prog}: Invalid argument for -lifetime: {text}.") from None
        elif args.flag("netblock", 2):
            netblock = args.value("an argument")
        elif args.flag("pool", 1):
            state["pool"] = args.value("a pool name argument")
        elif args.flag("name", 1):
            args.value("a daemon name argument")        # one collector per pool here
        elif args.flag("type", 1):
            kind = args.value("a daemon type argument")
            if kind.strip().upper() != "COLLECTOR":
                raise Usage(f"ERROR: token requests are kept by the collector only, not {kind}")
        elif args.flag("debug", 1):
            pass
        else:
            raise Usage(f"{prog}: Invalid command line argument: {arg}")
    if not netblock:
        raise Failed(f"{prog}: -netblock argument is required.\nExample: {prog} -netblock 192.168.0.0/24")
    address = _collector_address(state.get("pool"))
    try:
        _call(address, "token_request_auto_approve", netblock=netblock, lifetime=lifetime)
    except HTCondorException as exc:
        raise Failed(f"Failed to create new auto-approval rule: {exc}") from None
    print(f"Successfully installed auto-approval rule for netblock {netblock} with lifetime of "
          f"{lifetime / 3600:.2f} hours")
    remaining = _call(address, "token_request_list")
    if not remaining:
        print("Remote daemon reports no un-approved requests pending.", file=sys.stderr)
        return 0
    print("The following requests remain after auto-approval rule was installed:\n" + "=" * 50)
    for item in remaining:
        print(f"RequestId = \"{item['RequestId']}\"\nRequestedIdentity = \"{item['RequestedIdentity']}\"\n"
              f"PeerLocation = \"{item['PeerLocation']}\"\n"
              f"LimitAuthorization = \"{','.join(item['LimitAuthorization'])}\"")
    print("=" * 50 + "\nTo approve these requests, please run condor_token_request_approve manually.")
    return 0


# HTCondor's token tools print their usage on stderr and exit 1 (print_usage), for -help too.
create_main = entry("condor_token_create", create, CREATE_USAGE, help_to="stderr", help_status=1)
request_main = entry("condor_token_request", request, REQUEST_USAGE, help_to="stderr", help_status=1)
approve_main = entry("condor_token_request_approve", approve, APPROVE_USAGE, help_to="stderr", help_status=1)
request_list_main = entry("condor_token_request_list", request_list, REQUEST_LIST_USAGE, help_to="stderr", help_status=1)
fetch_main = entry("condor_token_fetch", fetch, FETCH_USAGE, help_to="stderr", help_status=1)
auto_approve_main = entry("condor_token_request_auto_approve", auto_approve, AUTO_APPROVE_USAGE,
                          help_to="stderr", help_status=1)
list_main = entry("condor_token_list", list_tokens, LIST_USAGE, help_to="stderr", help_status=1)
