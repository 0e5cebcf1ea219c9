"""condor_vacate_job: stop running jobs and put them back to idle, to run again.

    condor_vacate_job [-fast] (cluster | cluster.proc | user | -constraint X | -all)...

A vacated job's starter is told to stop it (``-fast``: killed at once, no grace
time) and the job goes back to idle (HTCondor's 004 evicted event in its log); a job
not running is left alone ("Job 3.0 not running to be vacated").  The job choices and
the lines printed are condor_rm's (``jobledger.condor_cli.act``).
"""

from __future__ import annotations

from jobledger.eventcore.enums import JobAction

from jobledger.condor_cli.act import act, parse, usage_text
from jobledger.condor_cli.args import entry, dash_prefix

PROG = "condor_vacate_job"


def run(argv: list[str]) -> int:
    fast = any(dash_prefix(arg, "fast", 1)[0] for arg in argv)
    rest = [arg for arg in argv if not dash_prefix(arg, "fast", 1)[0]]
    action = JobAction.VacateFast if fast else JobAction.Vacate
    return act(parse(rest, PROG, JobAction.Vacate), action, PROG)


USAGE = usage_text(PROG, JobAction.Vacate).replace(
    "  -help ", "  -fast               Vacate at once, without the job's grace time\n  -help ", 1)

main = entry(PROG, run, USAGE, help_to="stderr")
