"""condor_transfer_data: bring back the outputs of jobs submitted with -spool.

    condor_transfer_data [-pool H:P | -name S | -addr "<ip:port>"] (cluster | cluster.proc | user | -constraint X)...
    condor_transfer_data [-pool H:P | -name S | -addr "<ip:port>"] -all

As HTCondor's tool: the job choices become one constraint (any of them), it says
"Fetching data files..." and the completed spooled jobs' outputs land where each
was submitted (``Schedd.retrieve``; over the network the files come in the reply).
A failure is the schedd's words and "ERROR: Failed to spool job files." on stderr,
exit status 1.
"""

from __future__ import annotations

import sys

from jobledger.condor_cli import pool
from jobledger.condor_cli.args import Args, Failed, Help, Usage, entry, show_version
from jobledger.eventcore.errors import HTCondorException

PROG = "condor_transfer_data"
USAGE = (f"Usage: {PROG} [options] [constraints]\n"
         " where [options] is zero or more of:\n"
         "  -help               Display this message and exit\n"
         "  -version            Display version information and exit\n"
         "  -name schedd_name   Connect to the given schedd\n"
         "  -pool hostname      Use the given central manager to find daemons\n"
         "  -addr <ip:port>     Connect directly to the given \"sinful string\"\n"
         " and where [constraints] is one or more of:\n"
         "  cluster.proc        transfer data for the given job\n"
         "  cluster             transfer data for the given cluster of jobs\n"
         "  user                transfer data for all jobs owned by user\n"
         "  -constraint expr    transfer data for all jobs matching the boolean expression\n"
         "  -all                transfer data for all jobs (cannot be used with other constraints)\n")


def _clause(word: str) -> str | None:
    """The constraint of a job id or user argument; None (with a warning) if it is neither."""
    if word[:1].isdigit():
        found = pool.parse_proc_id(word)
        if found is None:
            print(f'Warning: unrecognized "{word}" skipped.', file=sys.stderr)
            return None
        if found[0] <= 0:
            raise Failed(f"Invalid cluster # from {word}.")
        return pool.id_clause(*found)
    if word[:1].isalpha():
        return pool.owner_clause(word)
    print(f'Warning: unrecognized "{word}" skipped', file=sys.stderr)
    return None


def run(argv: list[str]) -> int:
    args = Args(argv, PROG)
    clauses: list[str] = []
    name = where = addr = None
    everything = given = False
    for arg in args:
        if not args.is_flag():
            if everything:
                raise Usage()
            given = True
            clause = _clause(arg)
            if clause:
                clauses.append(clause)
        elif args.flag("constraint", 1):
            given = True
            clauses.append(args.constraint())
        elif args.flag("addr", 2):
            addr = args.value()
            if not (addr.startswith("<") and addr.endswith(">") and ":" in addr):
                raise Failed(f'{PROG}: "{addr}" is not a valid address\nShould be of the form '
                             "<ip.address.here:port>\nFor example: <123.456.789.123:6789>")
        elif args.flag("all", 1):
            if given:
                raise Usage()
            everything = True
        elif args.flag("name", 1):
            name = args.value()
        elif args.flag("pool", 1):
            where = args.value()
        elif args.flag("debug", 1):
            pass
        elif args.flag("version", 1):
            show_version()
        elif args.flag("help", 1):
            raise Help()
        else:
            raise Usage(f"Unrecognized option: {arg}")
    if not (everything or given):
        raise Usage("You did not specify any jobs")
    constraint = "ClusterId >= 0" if everything else pool.join_any(clauses)
    if not constraint:
        raise Failed("Unable to create a job constraint!")
    schedd = _schedd(addr, name, where)
    print("Fetching data files...", flush=True)
    try:
        schedd.retrieve(constraint)
    except HTCondorException as exc:
        raise Failed(f"\n{' '.join(str(exc).split())}\nERROR: Failed to spool job files.") from None
    return 0


def _schedd(addr: str | None, name: str | None, where: str | None):
    from jobledger.daemons.client.api import Schedd
    from jobledger.daemons.daemon import VERSION
    from jobledger.eventcore.classad import ClassAd
    if addr is not None:
        pool.load_config()
        return Schedd(ClassAd({"MyAddress": addr, "CondorVersion": VERSION}))
    try:
        return pool.schedd(name, where)
    except Failed as exc:
        raise Failed(f"{PROG}: {exc.message.removeprefix('ERROR: ')}") from None


main = entry(PROG, run, USAGE, help_to="stderr")
