"""``jobledger watch``: follow jobs live, like condor_watch_q.

    jobledger watch [JOB...] [--log FILE...] [--journal FILE]
                    [--exit all-done|any-held|any-failed] [--json]
    jobledger watch [JOB...] --since POSITION [--exit ...] [--json]

``--since POSITION`` prints the schedd's own stream of the jobs' events after
that journal position instead (``Schedd.watch``; jobledger.cli.watch_since):
each with its position, which resumes the stream with nothing missed or repeated.

Where it reads (first that applies):

- ``--log FILE`` (repeatable): those user logs (any HTCondor's);
- ``--journal FILE``: a pool's journal, no user logs needed;
- otherwise the pool every command finds (``--local-dir``, else LOCAL_DIR of
  $CONDOR_CONFIG, else ~/.condor/personal; jobledger.cli.where): when it
  runs, one query to its schedd finds the jobs' user logs (``UserLog``/``Iwd``)
  and those are followed; if the jobs have no logs, the pool's journal is
  followed when this machine can read it, else the schedd is polled (at most
  once per ``--poll-interval`` seconds, default 60).  A stopped pool's journal
  is read as it is.

JOB is ``CLUSTER`` or ``CLUSTER.PROC``; only those jobs are shown.

Without ``--exit``, ``--json`` reads what is there now, prints the state of
each job (one JSON object per line: cluster, proc, JobStatus and the job's
other known attributes; odd things in the logs are counted on stderr) and
exits; the table (one line per batch, with a
progress bar) keeps updating until interrupted.  With ``--exit`` both
follow the jobs until the condition holds (exit status 0) or ``--timeout``
passes (exit status 2).  Ctrl-C stops quietly with exit status 130.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable

import click

from jobledger.eventcore.errors import HTCondorException, TrackerTimeout
from jobledger.eventcore.ids import JobId
from jobledger.cli.params import SECONDS, check_job_id
from jobledger.cli.where import local_dir_value_option
from jobledger.eventcore.status import JobStatus
from jobledger.tracking import conditions
from jobledger.tracking.journal import JournalTracker
from jobledger.tracking.poll import PollTracker
from jobledger.tracking.summary import progress_bar, summarize
from jobledger.tracking.userlogs import UserLogTracker, logs_of_jobs

EXITS = {"all-done": conditions.all_done, "any-held": conditions.any_held,
         "any-failed": conditions.any_failed}
STATUS_NAMES = {s: s.name for s in JobStatus}


def parse_jobs(specs) -> list[JobId]:
    jobs = []
    for spec in specs:
        check_job_id(spec)
        try:
            jobs.append(JobId.parse(spec))
        except ValueError:
            raise click.BadParameter(f"{spec!r} is not CLUSTER or CLUSTER.PROC", param_hint="JOB")
    return jobs


def constraint_of(jobs: list[JobId]) -> str | None:
    parts = [f"ClusterId == {j.cluster}" if j.is_cluster
             else f"(ClusterId == {j.cluster} && ProcId == {j.proc})" for j in jobs]
    return " || ".join(parts) or None


def selected(states, jobs: list[JobId]):
    if not jobs:
        return states
    return {j: s for j, s in states.items()
            if any(j.cluster == w.cluster and (w.is_cluster or j.proc == w.proc) for w in jobs)}


def render(states, anomalies) -> str:
    lines = [f"{'BATCH':>8} {'IDLE':>6} {'RUN':>6} {'HOLD':>6} {'DONE':>6} {'TOTAL':>6}  "
             f"{'PROGRESS':<28} JOB_IDS"]
    for b in summarize(states):
        lines.append(f"{b.cluster:>8} {b.idle:>6} {b.running:>6} {b.held:>6} {b.done:>6} "
                     f"{b.total:>6}  {progress_bar(b):<28} {b.job_ids()}")
    odd = ", ".join(f"{k} {v}" for k, v in sorted(anomalies.items()) if v)
    lines.append(f"{len(states)} jobs" + (f"; log anomalies: {odd}" if odd else ""))
    return "\n".join(lines)


def echo_json(states, anomalies=None) -> None:
    text = json_lines(states)
    if text:
        click.echo(text)
    odd = ", ".join(f"{k} {v}" for k, v in sorted((anomalies or {}).items()) if v)
    if odd:                                   # reported beside the JSON, never inside it
        click.echo(f"log anomalies: {odd}", err=True)


def json_lines(states) -> str:
    out = []
    for job, state in sorted(states.items()):
        ad = state.to_ad()
        out.append(json.dumps({"cluster": job.cluster, "proc": job.proc, **ad,
                               "JobStatusName": STATUS_NAMES[JobStatus(state.status)]},
                              sort_keys=False))
    return "\n".join(out)


def make_tracker(logs, journal, jobs, poll_interval, local_dir=None):
    if logs:
        return UserLogTracker(logs, interval=0.5)
    if journal:
        return JournalTracker(journal, interval=0.5)
    import jobledger
    from jobledger.cli.where import find_pool
    pool = find_pool(local_dir)
    readable = os.access(pool.journal, os.R_OK)
    if not pool.running():
        if not readable:
            raise click.ClickException(f"no pool at {pool.local_dir} (found by {pool.how}): "
                                       "give --local-dir, --log or --journal")
        return JournalTracker(str(pool.journal), interval=0.5)
    pool.use()
    try:
        schedd = jobledger.Schedd()
        constraint = constraint_of(jobs)
        found = logs_of_jobs(schedd, constraint)
    except HTCondorException as exc:
        raise click.ClickException(f"cannot reach the schedd of the pool at {pool.local_dir}: {exc} "
                                   "(give --log or --journal to watch without a pool)")
    if found:
        return UserLogTracker(found, interval=0.5)
    if readable:
        return JournalTracker(str(pool.journal), interval=0.5)
    return PollTracker(schedd, constraint, min_interval=poll_interval)


def drain(tracker) -> None:
    while tracker.step():
        pass
    tracker.step()


@click.command("watch")
@click.argument("jobs", nargs=-1)
@click.option("--log", "logs", multiple=True, type=click.Path(dir_okay=False),
              help="A user log to follow (repeatable).")
@click.option("--journal", type=click.Path(exists=True, dir_okay=False),
              help="A pool's journal.sqlite to follow instead of user logs.")
@click.option("--exit", "exit_when", type=click.Choice(sorted(EXITS)),
              help="Stop following once this holds for the selected jobs.")
@click.option("--json", "as_json", is_flag=True, help="Print each job's state as a JSON line.")
@click.option("--timeout", type=SECONDS, default=None, help="Give up --exit after this many seconds.")
@click.option("--poll-interval", type=SECONDS, default=60.0, show_default=True,
              help="Seconds between schedd queries when polling.")
@click.option("--refresh", type=SECONDS, default=1.0, show_default=True,
              help="Seconds between table redraws.")
@click.option("--since", type=click.IntRange(min=0), default=None, metavar="POSITION",
              help="Print the schedd's stream of job events after this journal position "
                   "(each event with its position, which resumes the stream).")
@local_dir_value_option
def command(jobs, logs, journal, exit_when, as_json, timeout, poll_interval, refresh, local_dir, since):
    """Follow jobs live; a table per batch, or their states as JSON."""
    wanted = parse_jobs(jobs)
    if since is not None:
        sys.exit(_stream_since(wanted, logs, journal, exit_when, as_json, timeout, local_dir, since))
    missing = [log for log in logs if not os.path.exists(log)]
    if missing and exit_when is None and as_json:     # reading once: a missing log is a typo
        raise click.ClickException(f"no such user log: {missing[0]}")
    tracker = make_tracker(list(logs), journal, wanted, poll_interval, local_dir)
    if as_json and exit_when is None:
        with tracker:
            drain(tracker)
            echo_json(selected(tracker.states, wanted), tracker.anomalies)
        return
    condition = EXITS[exit_when]() if exit_when else (lambda states: False)
    met = follow(tracker, lambda s: condition(selected(s, wanted)) and bool(selected(s, wanted)),
                 wanted, timeout, refresh, show_table=not as_json)
    if as_json:
        echo_json(selected(tracker.states, wanted), tracker.anomalies)
    if exit_when and not met:
        click.echo(f"--exit {exit_when} did not happen within {timeout} s", err=True)
        sys.exit(2)


def _stream_since(wanted, logs, journal, exit_when, as_json, timeout, local_dir, since) -> int:
    """``--since``: the schedd's event stream (jobledger.cli.watch_since)."""
    import jobledger
    from jobledger.cli.watch_since import follow_since
    from jobledger.cli.where import find_pool
    if logs or journal:
        raise click.UsageError("--since follows the schedd's stream: it takes no --log or --journal")
    pool = find_pool(local_dir)
    if not pool.running():
        raise click.ClickException(f"no running pool at {pool.local_dir} (found by {pool.how}): "
                                   "--since follows its schedd")
    pool.use()
    try:
        schedd = jobledger.Schedd()
    except HTCondorException as exc:
        raise click.ClickException(f"cannot reach the schedd of the pool at {pool.local_dir}: {exc}")
    condition = None
    if exit_when:
        test: Callable = EXITS[exit_when]()  # type: ignore[operator]

        def condition(states) -> bool:
            return bool(selected(states, wanted)) and test(selected(states, wanted))
    return follow_since(schedd, constraint_of(wanted), since, as_json, condition, timeout)


def follow(tracker, condition, wanted, timeout, refresh, show_table) -> bool:
    """Run the tracker until ``condition`` or ``timeout``; redraw the table meanwhile.
    Ctrl-C leaves through here (the tracker closed) for the group to end quietly."""
    shown = None
    tty = sys.stdout.isatty()
    waited = 0.0
    with tracker:
        tracker.start()
        while True:
            step = refresh if timeout is None else max(min(refresh, timeout - waited), 0)
            try:
                tracker.wait_until(condition, timeout=step)
                met = True
            except TrackerTimeout:
                met = False
                waited += step
            if show_table:
                table = render(selected(tracker.snapshot(), wanted), tracker.anomalies)
                if table != shown:
                    if tty and shown is not None:
                        click.echo(f"\x1b[{shown.count(chr(10)) + 1}F\x1b[J", nl=False)
                    click.echo(table)
                    shown = table
            if met:
                return True
            if timeout is not None and waited >= timeout:
                return False
