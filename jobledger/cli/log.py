"""``jobledger log FILE...``: read job event logs (text, JSON or XML).

Default: a condor_userlog-like summary, one line per job: status, attempts
(executions), wall-clock run time, exit code or signal, holds and the last
hold reason.  ``--json`` prints every event as a JSON line (the journal's
versioned event payload plus file and byte offset); ``--follow`` keeps
reading as the files grow (Ctrl-C stops, exit status 130); ``--to text|json|xml`` re-writes
the events in that format.  Unreadable events are reported on stderr with
their file and byte offset, and make the exit status 1.
"""

from __future__ import annotations

import json
import os
import sys
import time
import warnings

import click

from jobledger.cli.progress import bar, quiet_option
from jobledger.eventcore.codecs.userlog import TextFormat, render
from jobledger.eventcore.errors import HTCondorException, UserLogError, UserLogReadError
from jobledger.eventcore.events import EventType, event_to_dict
from jobledger.eventcore.projections.jobstate import fold
from jobledger.eventcore.status import JobStatus
from jobledger.tracking.jobeventlog import JobEventLog
from jobledger.tracking.localzone import LOCAL_TZINFO

__all__ = ["command"]

_RUN_ENDS = {4, 5, 7, 9, 12, 24}


class _Reader:
    """Every file's events in turn, problems reported, nothing half-read."""

    def __init__(self, paths):
        self.problems = 0
        self.logs = []
        for path in paths:
            try:
                self.logs.append(JobEventLog(path, errors="raise"))
            except (HTCondorException, ValueError) as exc:     # ValueError: an empty name
                raise click.ClickException(f"{path!r}: {exc}") from exc

    def poll(self):
        for jel in self.logs:
            while True:
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        for event in jel.events(stop_after=0):
                            yield jel.path, event
                    break
                except UserLogReadError as exc:
                    self.problems += 1
                    click.echo(f"jobledger log: {exc.path}: byte {exc.offset}: {exc.message}",
                               err=True)
                except UserLogError as exc:
                    raise click.ClickException(str(exc)) from exc

    def close(self):
        for jel in self.logs:
            jel.close()


def _duration(seconds: int) -> str:
    days, rest = divmod(int(seconds), 86400)
    return "%d+%02d:%02d:%02d" % (days, rest // 3600, rest % 3600 // 60, rest % 60)


def _summary(events) -> list[str]:
    run, started, holds = {}, {}, {}
    for _path, e in events:
        n = e["EventTypeNumber"]
        job = (e.cluster, e.proc)
        if n == 1:
            started[job] = e.timestamp
        elif n in _RUN_ENDS and job in started:
            run[job] = run.get(job, 0) + e.timestamp - started.pop(job)
        if n == 12:
            holds.setdefault(job, []).append(e.get("HoldReason", "(no reason)"))
    return run, started, holds


def _summary_lines(collected) -> list[str]:
    result = fold(e for _p, e in collected)
    run, started, holds = _summary(collected)
    lines = ["%-12s %-10s %8s %12s %6s %5s  %s" % ("Job", "Status", "Attempts", "Run time",
                                                   "Exit", "Holds", "Last hold reason")]
    last_time = max((e.timestamp for _p, e in collected), default=0)
    for job_id in sorted(result.states):
        state = result.states[job_id]
        key = (job_id.cluster, job_id.proc)
        running = last_time - started[key] if key in started else 0
        if state.exit_by_signal:
            exit_text = f"sig {state.exit_signal}"
        else:
            exit_text = "" if state.exit_code is None else str(state.exit_code)
        reasons = holds.get(key, [])
        lines.append("%-12s %-10s %8d %12s %6s %5d  %s" % (
            job_id, JobStatus(state.status).name.title().replace("_", " "), state.starts,
            _duration(run.get(key, 0) + running), exit_text, len(reasons),
            reasons[-1] if reasons else ""))
    return lines


def _as_json(path, event) -> str:
    data = event_to_dict(event.event)
    data["type_name"] = EventType(data["type"]).name if data["type"] in EventType._value2member_map_ else None
    data["file"] = path
    data["offset"] = event.offset
    return json.dumps(data, ensure_ascii=False, sort_keys=True)


def _emit(path, event, as_json, to, fmt):
    if as_json:
        click.echo(_as_json(path, event))
    elif to:
        click.echo(render(event.event, to, fmt, LOCAL_TZINFO), nl=False)
    else:
        click.echo(str(event).rstrip("\n"))


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _convert(reader, as_json, to, fmt, quiet) -> None:
    """Every event now in the logs, re-written; a bar of the bytes read."""
    progress = bar(sum(_size(jel.path) for jel in reader.logs), "converting", "B", quiet)
    read: dict[str, int] = {}
    try:
        for path, event in reader.poll():
            _emit(path, event, as_json, to, fmt)
            progress.update(max(0, event.offset - read.get(path, 0)))
            read[path] = max(event.offset, read.get(path, 0))
    finally:
        progress.close()


@click.command("log")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print every event as a JSON line.")
@click.option("--follow", "-f", is_flag=True, help="Keep reading as the logs grow (Ctrl-C stops).")
@click.option("--to", type=click.Choice(["text", "json", "xml"]),
              help="Re-write the events in this user-log format.")
@click.option("--utc", is_flag=True, help="With --to: write UTC times (HTCondor's UTC option).")
@quiet_option
def command(files, as_json, follow, to, utc, quiet):
    """Summarise, print, follow or convert HTCondor job event logs.

    Converting to a file or a pipe draws a progress bar on a terminal's stderr."""
    if as_json and to:
        raise click.UsageError("--json and --to exclude each other")
    fmt = TextFormat(utc=utc)
    reader = _Reader(files)
    try:
        if not (as_json or to or follow):
            collected = list(reader.poll())
            for line in _summary_lines(collected):
                click.echo(line)
        else:
            _convert(reader, as_json, to, fmt, quiet or sys.stdout.isatty())
            while follow:
                time.sleep(0.2)
                for path, event in reader.poll():
                    _emit(path, event, as_json, to, fmt)
    finally:            # Ctrl-C (--follow's way out) ends quietly with 130, as in every command
        reader.close()
    if reader.problems:
        raise click.ClickException(f"{reader.problems} unreadable event(s), see above")
