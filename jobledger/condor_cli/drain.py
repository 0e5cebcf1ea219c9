"""condor_drain: take a startd out of service until its jobs are gone, or cancel that.

    condor_drain [-graceful|-quick|-fast] [-resume-on-completion|-exit-on-completion|
                 -restart-on-completion|-reconfig-on-completion] [-reason text]
                 [-check expr] [-start expr] [-pool host] [-verbose] machine
    condor_drain -cancel [-request-id id] [-start expr] machine

The options, their checks and the lines printed are HTCondor's drain tool's; the
startd does the draining (``jobledger.daemons.startd_drain``).
"""

from __future__ import annotations

import sys

from jobledger.condor_cli import pool
from jobledger.condor_cli.args import Failed, Usage, dash_prefix, entry
from jobledger.eventcore.enums import CompletionType, DaemonType, DrainType
from jobledger.eventcore.errors import HTCondorException

PROG = "condor_drain"
USAGE = f"""Usage: {PROG} [OPTIONS] machine

OPTIONS:
-cancel           Stop draining.
-debug            Display debugging info to console
-graceful         (the default) Honor MaxVacateTime and MaxJobRetirementTime.
-quick            Honor MaxVacateTime but not MaxJobRetirementTime.
-fast             Honor neither MaxVacateTime nor MaxJobRetirementTime.
-reason <text>    While draining, advertise <text> as the reason.
-resume-on-completion    When done draining, resume normal operation.
-exit-on-completion      When done draining, STARTD should exit and not restart.
-restart-on-completion   When done draining, STARTD should restart.
-reconfig-on-completion  When done draining, STARTD should reconfig and resume.
-request-id <id>  Specific request id to cancel (optional).
-check <expr>     Must be true for all slots to be drained or request is aborted.
-start <expr>     Change START expression to this while draining.
"""
COMPLETIONS = (("resume-on-completion", 1, CompletionType.Resume), ("exit-on-completion", 2, CompletionType.Exit),
               ("restart-on-completion", 4, CompletionType.Restart),
               ("reconfig-on-completion", 3, CompletionType.Reconfig))
VALUED = (("pool", 1), ("reason", 3), ("request-id", 3), ("check", 2), ("start", 5))


def _name(completion: CompletionType) -> str:
    return next(f"-{word}" for word, _, kind in COMPLETIONS if kind is completion)


def parse(argv: list[str]) -> dict:
    opts: dict = {"cancel": False, "how": DrainType.Graceful, "completion": CompletionType.Nothing,
                  "verbose": False}
    index = 0
    while index < len(argv):
        arg = argv[index]
        if not arg.startswith("-"):
            break
        if dash_prefix(arg, "help", 1)[0]:
            raise Usage()
        valued = next((word for word, least in VALUED if dash_prefix(arg, word, least)[0]), None)
        completion = next((kind for word, least, kind in COMPLETIONS if dash_prefix(arg, word, least)[0]), None)
        if valued is not None:
            if index + 1 >= len(argv):
                raise Usage(f"{PROG}: '{arg}' requires another argument")
            index += 1
            opts[valued] = argv[index]
        elif completion is not None:
            if opts["completion"] is not CompletionType.Nothing:
                raise Usage(f"{PROG}: '{arg}' conflicts with previous use of '{_name(opts['completion'])}'")
            opts["completion"] = completion
        elif dash_prefix(arg, "cancel", 1)[0]:
            opts["cancel"] = True
        elif dash_prefix(arg, "fast", 1)[0] or dash_prefix(arg, "quick", 1)[0] or dash_prefix(arg, "graceful", 1)[0]:
            opts["how"] = (DrainType.Fast if dash_prefix(arg, "fast", 1)[0] else
                           DrainType.Quick if dash_prefix(arg, "quick", 1)[0] else DrainType.Graceful)
        elif dash_prefix(arg, "verbose", 4)[0]:
            opts["verbose"] = True
        elif dash_prefix(arg, "debug", 3)[0]:
            pass
        else:
            raise Failed(f"ERROR: unexpected argument: {arg}", status=2)
        index += 1
    if index != len(argv) - 1:
        raise Failed("ERROR: must specify one target machine", status=2)
    opts["target"] = argv[index]
    if not opts["cancel"] and "request-id" in opts:
        raise Failed("ERROR: -request-id may only be used with -cancel", status=2)
    if opts["cancel"]:
        for key, message in (("check", "-check may not be used with -cancel"),
                             ("reason", "cannot use -reason with -cancel")):
            if key in opts:
                raise Failed(f"ERROR: {message}", status=2)
        if opts["completion"] is not CompletionType.Nothing:
            raise Failed("ERROR: cannot use an -on-completion option with -cancel", status=2)
    return opts


def run(argv: list[str]) -> int:
    opts = parse(argv)
    from jobledger.daemons.client.api import Collector
    from jobledger.daemons.client.startd import Startd
    collector = Collector(opts["pool"]) if "pool" in opts else pool.collector()
    try:
        location = collector.locate(DaemonType.Startd, opts["target"])
    except HTCondorException as exc:
        raise Failed(f"ERROR: {exc}") from None
    if location is None:
        raise Failed(f"ERROR: Can't find address for startd {opts['target']}")
    startd = Startd(location)
    address, name = location["MyAddress"], location.get("Name", opts["target"])
    try:
        if opts["cancel"]:
            startd.cancelDrainJobs(opts.get("request-id"))
            print(f"Sent request to cancel draining on {name}")
        else:
            request = startd.drainJobs(opts["how"], opts["completion"], opts.get("check"), opts.get("start"),
                                       opts.get("reason"))
            print(f"Sent request to drain the startd {address} with {name}. This only affects the single "
                  "startd; any other startds running on the same host will not be drained.")
            if opts["verbose"]:
                print(f"\tRequest id: {request}")
    except HTCondorException as exc:
        command = "CANCEL_DRAIN_JOBS" if opts["cancel"] else "DRAIN_JOBS"
        print(f"Attempt to send {command} to startd {address} failed\n{exc}", file=sys.stderr)
        return 1
    return 0


main = entry(PROG, run, USAGE, help_to="stderr", help_status=1)
