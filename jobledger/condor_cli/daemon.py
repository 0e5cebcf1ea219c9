"""condor_off, condor_on, condor_restart and condor_reconfig: commands to the pool's master.

Without a daemon flag they act on the whole pool ("Sent "Kill-All-Daemons"
command to local master"); with ``-schedd``, ``-startd``, ``-collector``,
``-negotiator`` (or ``-daemon NAME``) on that daemon only ("Sent
"Kill-Daemon" command for "schedd" to local master").  The master carries
them out (``daemons.client.api.send_command``).
"""

from __future__ import annotations

from jobledger.eventcore.enums import DaemonCommand, DaemonType
from jobledger.eventcore.errors import HTCondorException

from jobledger.condor_cli import pool
from jobledger.condor_cli.args import Args, Failed, Help, Usage, entry

DAEMONS = ("schedd", "startd", "collector", "negotiator", "master")


def usage_text(prog: str) -> str:
    return (f"Usage: {prog} [general-options] [targets] [daemon]\n"
            "where [general-options] can be zero or more of:\n"
            "    -help              gives this usage information\n"
            "    -graceful / -fast / -peaceful   how the daemons stop\n"
            "where [targets] can be zero or more of:\n"
            "    -all               all hosts in your pool (this one here)\n"
            "    hostname           the given host\n"
            "where [daemon] can be one of:\n"
            "    -master / -schedd / -startd / -collector / -negotiator\n"
            "    -daemon <name>     the named daemon\n")


def _parse(argv: list[str], prog: str) -> str | None:
    args = Args(argv, prog)
    target = None
    for arg in args:
        if not args.is_flag():
            continue          # host names: every daemon of a personal pool is on this host
        if args.flag("help", 1):
            raise Help()
        if any(args.flag(name, 2) for name in DAEMONS):
            target = next(name for name in DAEMONS if args.flag(name, 2))
        elif args.flag("daemon", 1) or args.flag("subsystem", 2):
            target = args.value().lower()
        elif args.flag("all", 1) or args.flag("graceful", 1) or args.flag("fast", 1) \
                or args.flag("peaceful", 1) or args.flag("force-graceful", 2) or args.flag("debug", 2):
            pass
        elif args.flag("name", 1) or args.flag("pool", 1) or args.flag("addr", 1):
            args.value()
        else:
            raise Usage()
    return None if target == "master" else target


def _send(command: DaemonCommand, target: str | None = None) -> None:
    from jobledger.daemons.client.api import send_command
    try:
        master = pool.collector().locate(DaemonType.Master)
        send_command(master, command, target)
    except (HTCondorException, ValueError) as exc:
        raise Failed(f"Can't find address for local master ({' '.join(str(exc).split())})") from None


def off(argv: list[str]) -> int:
    target = _parse(argv, "condor_off")
    if target is None:
        _send(DaemonCommand.DaemonsOff)
        print('Sent "Kill-All-Daemons" command to local master')
    else:
        _send(DaemonCommand.DaemonOff, target)
        print(f'Sent "Kill-Daemon" command for "{target}" to local master')
    return 0


def on(argv: list[str]) -> int:
    target = _parse(argv, "condor_on")
    if target is None:
        for name in DAEMONS[:-1]:
            _send(DaemonCommand.DaemonOn, name)
        print('Sent "Spawn-All-Daemons" command to local master')
    else:
        _send(DaemonCommand.DaemonOn, target)
        print(f'Sent "Spawn-Daemon" command for "{target}" to local master')
    return 0


def restart(argv: list[str]) -> int:
    target = _parse(argv, "condor_restart")
    if target is None:
        _send(DaemonCommand.Restart)
        print('Sent "Restart" command to local master')
    else:
        _send(DaemonCommand.DaemonOff, target)
        _send(DaemonCommand.DaemonOn, target)
        print(f'Sent "Restart" command for "{target}" to local master')
    return 0


def reconfig(argv: list[str]) -> int:
    """condor_reconfig: the master and its daemons (or the one named) read their
    configuration again."""
    target = _parse(argv, "condor_reconfig")
    _send(DaemonCommand.Reconfig, target)
    print(f'Sent "Reconfig" command to local {target or "master"}')
    return 0


off_main = entry("condor_off", off, usage_text("condor_off"), help_to="stderr")
on_main = entry("condor_on", on, usage_text("condor_on"), help_to="stderr")
restart_main = entry("condor_restart", restart, usage_text("condor_restart"), help_to="stderr")
reconfig_main = entry("condor_reconfig", reconfig, usage_text("condor_reconfig"), help_to="stderr")
