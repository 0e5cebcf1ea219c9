"""``jobledger rm|hold|release JOB... | -constraint EXPR``: condor_rm, condor_hold, condor_release."""

from __future__ import annotations

import click

from jobledger.eventcore.enums import JobAction
from jobledger.cli.params import CONSTRAINT, check_job_id
from jobledger.cli.output import echo_json, json_option
from jobledger.cli.readers import schedd_of
from jobledger.cli.where import local_dir_option

VERBS = {JobAction.Remove: "marked for removal", JobAction.Hold: "held", JobAction.Release: "released"}


def _spec(jobs, constraint):
    if constraint and jobs:
        raise click.UsageError("give job ids or -constraint, not both")
    if constraint:
        return constraint
    if not jobs:
        raise click.UsageError("give at least one job id (cluster or cluster.proc) or -constraint")
    for job in jobs:
        check_job_id(job)
    return list(jobs) if all("." in j for j in jobs) else \
        " || ".join(f"(ClusterId == {j.split('.')[0]}" + (f" && ProcId == {j.split('.')[1]})" if "." in j else ")")
                    for j in jobs)


def _command(action: JobAction, name: str):
    @click.command(name=name, help=f"{name.capitalize()} jobs: by id (cluster or cluster.proc) or -constraint.")
    @local_dir_option
    @click.option("-constraint", "--constraint", "constraint", default=None, type=CONSTRAINT,
                  help="A ClassAd constraint.")
    @click.option("-reason", "--reason", "reason", default=None, help="Why (kept in the job ad).")
    @json_option("The schedd's answer (TotalSuccess, TotalNotFound, ...) as one JSON object.")
    @click.argument("jobs", nargs=-1)
    def command(pool, constraint, reason, as_json, jobs):
        spec = _spec(jobs, constraint)
        result = schedd_of(pool).act(action, spec, reason)
        done = result["TotalSuccess"]
        if as_json:
            echo_json({key: result[key] for key in sorted(result.keys())})
            if not done:
                click.get_current_context().exit(1)
            return
        if not done:
            problems = [k[5:] for k in ("TotalNotFound", "TotalBadStatus", "TotalAlreadyDone",
                                        "TotalPermissionDenied") if result[k]]
            raise click.ClickException(f"no job {VERBS[action]}" +
                                       (f" ({', '.join(problems)})" if problems else ""))
        click.echo(f"{done} job(s) {VERBS[action]}.")
    return command


rm = _command(JobAction.Remove, "rm")
hold = _command(JobAction.Hold, "hold")
release = _command(JobAction.Release, "release")
