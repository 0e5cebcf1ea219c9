"""``jobledger q``: the queue, as condor_q shows it (batch summary, -nobatch, -af, -long, -json)."""

from __future__ import annotations

import sys
import time

import click

from jobledger.cli.params import CONSTRAINT, check_job_id
from jobledger.cli.output import ad_json, echo_json, json_option
from jobledger.cli.readers import query_exprs, reader_of
from jobledger.cli.where import local_dir_option
from jobledger.eventcore.status import STATUS_LETTER

COLUMNS = ["ClusterId", "ProcId", "Owner", "QDate", "JobStatus", "RemoteWallClockTime", "Cmd",
           "Args", "Arguments", "JobBatchName", "EnteredCurrentStatus", "JobCurrentStartDate"]


def _when(value) -> str:
    return time.strftime("%m/%d %H:%M", time.localtime(value)) if isinstance(value, int) else "-"


def _run_time(ad) -> str:
    seconds = 0
    if ad.get("JobStatus") == 2 and isinstance(ad.get("JobCurrentStartDate"), int):
        seconds = int(time.time()) - ad["JobCurrentStartDate"]
    return f"{seconds // 86400}+{seconds % 86400 // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


@click.command()
@local_dir_option
@click.option("-constraint", "--constraint", "constraint", default=None, type=CONSTRAINT,
              help="A ClassAd constraint.")
@click.option("-nobatch", "--nobatch", "nobatch", is_flag=True, help="One line per job.")
@click.option("-af", "--af", "autoformat", is_flag=True,
              help="Print the attributes named as arguments, one job per line (condor_q -af).")
@click.option("-long", "--long", "long_", is_flag=True, help="Whole job ads, condor_q -long style.")
@json_option("Job ads as a JSON list.")
@click.argument("jobs", nargs=-1)
def q(pool, constraint, nobatch, autoformat, long_, as_json, jobs):
    """Show the jobs in the queue (all of them, or JOBS: cluster or cluster.proc ids).

    With -af, the arguments are attribute names: ``jobledger q -af ClusterId JobStatus``.
    On a stopped pool, the queue as its journal holds it.
    """
    names = []
    if autoformat:
        names, jobs = list(jobs), ()
        if not names:
            raise click.UsageError("-af needs attribute names")
    parts = [f"({constraint})"] if constraint else []
    if jobs:
        ids = []
        for job in jobs:
            cluster, _, proc = check_job_id(job, "JOBS").partition(".")
            ids.append(f"(ClusterId == {cluster}" + (f" && ProcId == {proc})" if proc else ")"))
        parts.append("(" + " || ".join(ids) + ")")
    text = " && ".join(parts) or None
    schedd = reader_of(pool)
    if autoformat:
        _autoformat(schedd, text, names)
        return
    if long_ or as_json:
        ads = schedd.query(text)
        if as_json:
            echo_json([ad_json(ad) for ad in ads])
        else:
            click.echo("\n\n".join(ad.printOld().rstrip("\n") for ad in ads))
        return
    ads = schedd.query(text, COLUMNS)
    if nobatch:
        click.echo(f"{'ID':>9} {'OWNER':<12} {'SUBMITTED':<11} {'RUN_TIME':>12} ST CMD")
        for ad in ads:
            command = f"{ad.get('Cmd', '')} {ad.get('Arguments', ad.get('Args', ''))}".strip()
            click.echo(f"{ad['ClusterId']:>7}.{ad['ProcId']:<1} {ad.get('Owner', '-'):<12} "
                       f"{_when(ad.get('QDate')):<11} {_run_time(ad):>12} "
                       f"{STATUS_LETTER.get(ad.get('JobStatus'), '?'):<2} {command}")
    else:
        _batches(ads)
    counts = {s: sum(1 for ad in ads if ad.get("JobStatus") == s) for s in STATUS_LETTER}
    click.echo(f"\nTotal for query: {len(ads)} jobs; {counts[4]} completed, {counts[3]} removed, "
               f"{counts[1]} idle, {counts[2]} running, {counts[5]} held, {counts[7]} suspended")


def _autoformat(reader, constraint: str | None, names: list[str]) -> None:
    """One line per job, as ``condor_q -af`` prints it, streamed: each answer is
    printed as it comes, in its wire form (no ClassAd built for literal values)."""
    from jobledger.condor_cli.adprint import AutoFormat
    from jobledger.condor_cli.args import Usage
    try:
        show = AutoFormat(names, None, "jobledger q")
    except Usage as exc:
        raise click.UsageError(str(exc)) from None
    out = sys.stdout
    for exprs in query_exprs(reader, constraint, show.projection()):
        out.write(show.row_exprs(exprs))
    out.flush()


def _batches(ads) -> None:
    click.echo(f"{'OWNER':<12} {'BATCH_NAME':<14} {'SUBMITTED':<11} {'DONE':>5} {'RUN':>5} "
               f"{'IDLE':>5} {'HOLD':>5} {'TOTAL':>6} JOB_IDS")
    batches: dict = {}
    for ad in ads:
        key = (ad.get("Owner", "-"), ad.get("JobBatchName") or f"ID: {ad['ClusterId']}")
        batches.setdefault(key, []).append(ad)
    for (owner, name), members in batches.items():
        count = {s: sum(1 for ad in members if ad.get("JobStatus") == s) for s in STATUS_LETTER}
        ids = [f"{ad['ClusterId']}.{ad['ProcId']}" for ad in members]
        span = ids[0] if len(ids) == 1 else f"{ids[0]}-{ids[-1].split('.')[1]}"
        click.echo(f"{owner:<12} {name:<14} {_when(members[0].get('QDate')):<11} "
                   f"{count[4] or '_':>5} {count[2] or '_':>5} {count[1] or '_':>5} "
                   f"{count[5] or '_':>5} {len(members):>6} {span}")
