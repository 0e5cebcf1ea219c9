"""condor_store_cred: store, remove or look for a user's credential in the credd.

    condor_store_cred [options] action
      action: add | delete | query                  (the user's password)
              add-krb | delete-krb | query-krb      (Kerberos credential)
              add-oauth | delete-oauth | query-oauth (OAuth credential, with -s)
      options: -u user@domain, -p password, -i file (the credential; - is stdin),
               -s service, -H handle, -n name (the credd), -c (the pool password: not here)

It prints ``Account: user@domain`` and the result as HTCondor's tool words it
("Operation succeeded.", "A credential is stored and is valid.", "No credential is
stored.") and exits 0 on success, 1 otherwise.  A password not given with -p is read
from the terminal without echo.
"""

from __future__ import annotations

import getpass
import socket
import sys

from jobledger.condor_cli import pool
from jobledger.condor_cli.args import Failed, Usage, entry
from jobledger.eventcore.enums import DaemonType
from jobledger.eventcore.errors import HTCondorException

PROG = "condor_store_cred"
USAGE = f"""Usage: {PROG} [options] action
  where action is one of:
    add               (Add credential to secure storage)
    delete            (Remove credential from secure storage)
    query             (Check if a credential has been stored)
    add-krb, delete-krb, query-krb        (the same for a Kerberos credential)
    add-oauth, delete-oauth, query-oauth  (the same for an OAuth credential, with -s)
  and where [options] is one or more of:
    -u username       (use the specified username)
    -c                (update/query the condor pool password)
    -p password       (use the specified password rather than prompting)
    -i filename       (read the credential from a file, - for stdin)
    -s service        (the OAuth service)
    -H handle         (the OAuth service's handle)
    -n name           (update/query to the named machine)
    -d                (display debugging messages)
    -h                (display this message)

"""
ACTIONS = {"add": ("add", 0x24), "delete": ("delete", 0x24), "query": ("query", 0x24),
           "add-krb": ("add", 0x20), "delete-krb": ("delete", 0x20), "query-krb": ("query", 0x20),
           "add-oauth": ("add", 0x28), "delete-oauth": ("delete", 0x28), "query-oauth": ("query", 0x28)}
VALUED = {"-u": "user", "-p": "password", "-i": "infile", "-s": "service", "-H": "handle", "-n": "name"}


def parse(argv: list[str]) -> dict:
    opts: dict = {}
    index = 0
    while index < len(argv):
        arg = argv[index]
        if arg in VALUED:
            if index + 1 >= len(argv):
                raise Usage(f"ERROR: Option '{arg}' requires an argument\n")
            index += 1
            opts[VALUED[arg]] = argv[index]
        elif arg.startswith(("-h", "--h")):  # HTCondor's tool takes any -h... as -h
            raise Usage()
        elif arg == "-c":
            opts["pool"] = True
        elif arg == "-d":
            pass
        elif arg.startswith("-"):
            raise Usage(f"ERROR: Unrecognized option - '{arg}'\n")
        elif arg.lower() in ACTIONS:
            if "action" in opts and opts["action"] != arg.lower():
                raise Usage("ERROR: exactly one command must be provided")
            opts["action"] = arg.lower()
        else:
            raise Usage(f"ERROR: Unrecognized command - '{arg}'\n")
        index += 1
    if "action" not in opts:
        raise Usage()
    user = opts.get("user")
    if user is not None:
        at = user.find("@")
        if at <= 0 or at == len(user) - 1:
            raise Usage(f"ERROR: Username '{user}' is not of the form: account@domain")
    return opts


def _credential(opts: dict, kind: int) -> bytes:
    if "infile" in opts:
        if opts["infile"] == "-":
            return sys.stdin.buffer.read(1 << 20)
        with open(opts["infile"], "rb") as handle:
            return handle.read(1 << 20)
    if "password" in opts:
        return opts["password"].encode()
    if kind != 0x24:
        raise Failed(f"ERROR: {PROG}: give the credential with -i file")
    return getpass.getpass("Enter password: ").encode()


def run(argv: list[str]) -> int:
    opts = parse(argv)
    op, kind = ACTIONS[opts["action"]]
    if opts.get("pool"):
        print("Querying the pool password is not supported." if op == "query" else
              "Operation failed.\n    The pool password is the pool's signing key here "
              "(condor_token_create makes tokens from it).", file=sys.stderr)
        return 1
    if kind == 0x28 and not opts.get("service"):
        raise Failed(f"ERROR: {PROG}: {opts['action']} needs -s service")
    pool.load_config()
    from jobledger.daemons.config_files import param
    from jobledger.daemons.client.credd import Credd, CredType
    domain = param.get("UID_DOMAIN") or socket.gethostname()
    user = opts.get("user") or f"{getpass.getuser()}@{domain}"
    print(f"Account: {user}\n")
    try:
        location = pool.collector().locate(DaemonType.Credd, opts.get("name"))
    except HTCondorException as exc:
        raise Failed(f"ERROR: Can't find the credd ({' '.join(str(exc).split())})") from None
    if location is None:
        raise Failed(f"ERROR: Can't find the credd {opts.get('name')}")
    credd = Credd(location)
    service, handle = str(opts.get("service") or ""), opts.get("handle")
    if op == "add":
        data = _credential(opts, kind)
        if kind == 0x28:
            credd.add_user_service_cred(CredType.OAuth, data, service, handle, user)
        else:
            credd.add_user_cred(CredType(kind), data, user)
        print("Operation succeeded.")
        return 0
    if op == "delete":
        if kind == 0x28:
            credd.delete_user_service_cred(CredType.OAuth, service, handle, user)
        else:
            credd.delete_user_cred(CredType(kind), user)
        print("Operation succeeded.")
        return 0
    found = (credd.query_user_service_cred(CredType.OAuth, service, handle, user) if kind == 0x28
             else credd.query_user_cred(CredType(kind), user))
    if found is None:
        print("No credential is stored.")
        return 1
    print("A credential is stored and is valid.")
    return 0


main = entry(PROG, run, USAGE, help_to="stderr", help_status=1)
