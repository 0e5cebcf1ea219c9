"""condor_ping: may I run commands of these authorization levels at a daemon?

``condor_ping [-pool HOST:PORT] [-name NAME] [-type SCHEDD|COLLECTOR] [-address ADDR]
[-quiet|-table|-verbose] LEVEL|COMMAND ...``: for each level (READ, WRITE,
ADMINISTRATOR, ...) or DaemonCore command name, a line saying whether it is
authorized, how the session was authenticated and as whom.  Exit status 0 when
every one succeeded, 1 otherwise.  The daemon is the pool's schedd unless -type
says otherwise; over the network the pool's token handshake runs (once: the session
is cached for the next levels).
"""

from __future__ import annotations

import sys

from jobledger.eventcore.enums import DaemonType
from jobledger.eventcore.errors import HTCondorException

from jobledger.condor_cli import pool
from jobledger.condor_cli.args import Args, Failed, Help, Usage, entry

USAGE = """\
Usage: condor_ping [options] token [token ...]
    where token is an authorization level (READ, WRITE, ADMINISTRATOR, DAEMON, ...) or a command name
    -pool <host:port>     the pool's collector
    -name <name>          the daemon's name
    -type <subsystem>     SCHEDD (default) or COLLECTOR
    -address <sinful>     the daemon's address (no collector asked)
    -quiet                no output, only the exit status
    -table                a table of the results
    -verbose              the whole authorization ad of each
"""


def run(argv: list[str]) -> int:
    args = Args(argv, "condor_ping")
    pool_name = name = address = None
    kind, mode, tokens = "SCHEDD", "line", []
    for arg in args:
        if args.flag("help", 1):
            raise Help()
        elif args.flag("pool", 1):
            pool_name = args.value("a pool")
        elif args.flag("name", 1):
            name = args.value("a daemon name")
        elif args.flag("type", 2):
            kind = args.value("a daemon type").upper()
        elif args.flag("address", 1):
            address = args.value("an address")
        elif args.flag("quiet", 1):
            mode = "quiet"
        elif args.flag("table", 2):
            mode = "table"
        elif args.flag("verbose", 1):
            mode = "verbose"
        elif args.flag("debug", 1) or args.flag("config", 1):
            continue
        elif args.is_flag():
            raise args.unknown()
        else:
            tokens.append(arg)
    if not tokens:
        raise Usage("condor_ping: name at least one authorization level or command")
    from jobledger.daemons.secman import ping_ad
    if address is None:
        types = {"SCHEDD": DaemonType.Schedd, "COLLECTOR": DaemonType.Collector}
        if kind not in types:
            raise Usage(f"condor_ping: -type {kind} is not one this pool answers (SCHEDD, COLLECTOR)")
        try:
            located = pool.collector(pool_name).locate(types[kind], name)
        except HTCondorException as exc:
            raise Failed(f"ERROR: Can't find address of {kind.lower()} ({' '.join(str(exc).split())})") from None
        if located is None:
            raise Failed(f"ERROR: Can't find address of {kind.lower()} {name}")
        address = located["MyAddress"]
    failed = 0
    if mode == "table":
        print(f"{'Instruction':<20} {'Authentication':<15} {'Encryption':<11} {'Integrity':<10} "
              f"{'Decision':<9} Identity")
    for token in tokens:
        try:
            ad = ping_ad(address, token)
        except HTCondorException as exc:
            failed += 1
            if mode != "quiet":
                print(f"{token.upper()} command failed: {' '.join(str(exc).split())}",
                      file=sys.stdout if mode == "table" else sys.stderr)
            continue
        if mode == "verbose":
            print(ad.printOld() if hasattr(ad, "printOld") else str(ad))
        elif mode == "table":
            print(f"{token.upper():<20} {ad['AuthMethods']:<15} {ad['Encryption']:<11} "
                  f"{ad['Integrity']:<10} {'ALLOW':<9} {ad['MyRemoteUserName']}")
        elif mode == "line":
            crypto = ad["CryptoMethods"] or "no encryption"
            print(f"{token.upper()} command using ({crypto}, and {ad['AuthMethods']}) succeeded as "
                  f"{ad['MyRemoteUserName']} to {kind.lower()}.")
    return 1 if failed else 0


main = entry("condor_ping", run, USAGE)
