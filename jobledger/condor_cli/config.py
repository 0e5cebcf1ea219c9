"""condor_config_val and condor_version: the pool's configuration and version.

``condor_config_val NAME...`` prints each expanded value on a line ("Not
defined: NAME" on stderr and exit 1 for one that is not); ``-v`` adds where
it was set, ``-raw`` prints it unexpanded, ``-dump [pattern]`` lists
``NAME = value`` of every setting whose name contains the pattern,
``-config`` the files read.  ``-name``/``-address``/``-schedd``/``-master``/...
ask that daemon for its values, and ``-set``/``-rset``/``-unset``/``-runset``
change its configuration (jobledger.condor_cli.config_remote).
"""

from __future__ import annotations

import socket

from jobledger.daemons.config_files import param

from jobledger.condor_cli import pool
from jobledger.condor_cli.args import Args, Help, Usage, entry
from jobledger.condor_cli.config_remote import SET_MODES, ask_daemon
from jobledger.condor_cli.config_write import write_config

CONFIG_VAL_USAGE = """\
Usage: condor_config_val [options] variable [variable] ...
   or: condor_config_val [options] -dump [pattern]
   or: condor_config_val -config
   or: condor_config_val -writeconfig[:options] <file>
    [options] are
\t-v / -verbose\t\tshow where each variable was set
\t-raw\t\t\tshow values as written, not expanded
\t-expand\t\t\tshow expanded values (the default)
\t-default\t\tshow the built-in default for undefined variables
\t-name <name>\t\tthe daemon to ask (this pool's daemons share one configuration)
\t-master | -schedd | -startd | -collector | -negotiator\tthe kind of daemon to ask
"""

DAEMON_FLAGS = ("master", "schedd", "startd", "collector", "negotiator", "shadow", "starter")


def config_val(argv: list[str]) -> int:
    args = Args(argv, "condor_config_val")
    names: list[str] = []
    verbose = raw = dump = sources = default = False
    write_to = write_options = None
    daemon_name = address = mode = None
    kind = "master"
    for arg in args:
        if not args.is_flag():
            names.append(arg)
        elif args.flag("verbose", 1):
            verbose = True
        elif args.flag("raw", 2):
            raw = True
        elif args.flag("expand", 2) or args.flag("evaluate", 2):
            raw = False
        elif args.flag("dump", 1):
            dump = True
        elif args.flag("config", 3):
            sources = True
        elif args.flag("writeconfig", 3):
            write_options = args.qualifier
            write_to = args.value("a file name")
        elif args.flag("default", 3):
            default = True
        elif args.flag("name", 1):
            daemon_name = args.value()
        elif args.flag("address", 2):
            address = args.value()
        elif args.flag("pool", 1):
            args.value()
        elif (chosen := next((word for word in SET_MODES if args.flag(word, len(word))), None)):
            mode = chosen
            names.append(args.value("a configuration setting"))
        elif (chosen := next((word for word in DAEMON_FLAGS if args.flag(word, 3)), None)):
            kind = chosen
        elif args.flag("debug", 3):
            pass
        elif args.flag("help", 2):
            raise Help()
        else:
            raise Usage(f"condor_config_val: unknown option {arg}")
    pool.load_config()
    if daemon_name or address or mode or kind != "master":     # asking a daemon, as HTCondor's tool does
        if kind not in ("master", "schedd", "startd", "collector", "negotiator"):
            raise Usage(f"condor_config_val: -{kind} has no daemon to ask")
        if not names:
            raise Usage()
        return ask_daemon(kind, daemon_name, address, mode, names, verbose)
    table = param.table()
    if write_to is not None:
        return write_config(table, write_to, write_options)
    if sources:
        found = pool.config_path()
        print("Configuration source:\n\t" + (found or "(none)"))
        return 0
    if dump:
        return _dump(table, names, verbose)
    if not names:
        raise Usage()
    return _show(table, names, verbose, raw, default)


def _show(table, names: list[str], verbose: bool, raw: bool, default: bool) -> int:
    import sys
    missing = 0
    from jobledger.daemons.config_files import load_config
    defaults = load_config(None, {}) if default else None
    for name in names:
        setting = table.settings.get(name.upper())
        text = None
        if setting is not None:
            text = setting.value if raw else param.expanded(name)
        elif defaults is not None and defaults.raw(name) is not None:
            text = defaults.raw(name)
        if text is None:
            print(f"Not defined: {name.upper()}", file=sys.stderr)
            missing += 1
            continue
        if not verbose:
            print(text)
            continue
        print(f"{setting.name if setting else name.upper()} = {text}")
        if setting is not None:
            print(f" # at: {_where(setting)}")
            if not raw and setting.value != text:
                print(f" # raw: {setting.value}")
        print()
    return 1 if missing else 0


def _where(setting) -> str:
    return f"{setting.source}, line {setting.line}" if setting.line > 0 else setting.source


def _dump(table, patterns: list[str], verbose: bool) -> int:
    print(f"# Configuration from machine: {socket.gethostname()}")
    chosen = [s for s in table.settings.values()
              if not patterns or any(p.upper() in s.name.upper() for p in patterns)]
    for setting in sorted(chosen, key=lambda s: s.name.upper()):
        print(f"{setting.name} = {setting.value}")
        if verbose:
            print(f" # at: {_where(setting)}")
            expanded = param.expanded(setting.name)
            if setting.value and expanded != setting.value:
                print(f" # expanded: {expanded}")
    return 0


config_val_main = entry("condor_config_val", config_val, CONFIG_VAL_USAGE, help_to="stderr",
                        help_status=1)


VERSION_USAGE = "Usage: condor_version [-syscall] [-arch] [-opsys]\n"


def version(argv: list[str]) -> int:
    from jobledger.daemons.client.api import platform, version as version_text
    args = Args(argv, "condor_version")
    for arg in args:
        if args.flag("arch", 1):
            print(platform().split()[1].split("-")[0])
            return 0
        if args.flag("opsys", 1):
            print(platform().split()[1].split("-", 1)[1].upper())
            return 0
        if args.flag("syscall", 1):
            continue
        if args.flag("help", 1):
            raise Help()
        raise Usage()
    print(version_text())
    print(platform())
    return 0


version_main = entry("condor_version", version, VERSION_USAGE, help_to="stderr")
