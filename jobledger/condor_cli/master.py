"""condor_master: start the pool of the configuration CONDOR_CONFIG names.

``-f`` keeps the master in the foreground (it is the process the caller started,
and exits when the pool stops); without it the master detaches into its own
session, as HTCondor's does, and condor_master returns at once.  ``-t`` (log to
the terminal) is accepted.  The pool is ``daemons.master``'s: DAEMON_LIST, the
logs at ``*_LOG``, ``$(RUN)/master.pid``.
"""

from __future__ import annotations

import os
import subprocess
import sys

from jobledger.condor_cli.args import Args, Failed, Help, entry

USAGE = """\
Usage: condor_master [-f] [-t] [-help]
\t-f\tRun in the foreground (do not detach)
\t-t\tAlso print the log to the terminal
"""


def run(argv: list[str]) -> int:
    args = Args(argv, "condor_master")
    foreground = False
    for arg in args:
        if args.flag("help", 1):
            raise Help()
        if arg == "-f" or args.flag("foreground", 2):
            foreground = True
        elif arg == "-t" or args.flag("nodaemon", 2) or arg == "-b":
            pass
        else:
            raise args.unknown()
    if not os.environ.get("CONDOR_CONFIG"):
        raise Failed("condor_master: CONDOR_CONFIG is not set: no configuration to start a pool from")
    if foreground:
        from jobledger.daemons.master import Master
        return Master().run()
    subprocess.Popen([sys.executable, "-m", "jobledger.daemons.master"], stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    return 0


main = entry("condor_master", run, USAGE, help_to="stderr")
