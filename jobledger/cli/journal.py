"""``jobledger journal import|export|queue-log|sql|status-diagram``, ``jobledger replay``,
``jobledger audit``.

A thin layer: the work is in daemons.client.importer, eventcore.projections.replay,
daemons.storage.sql and daemons.audit.  Expected failures are ``ClickException``s (exit 1 for
findings and bad input, 2 for usage errors as click does).
"""

from __future__ import annotations

import csv
import datetime
import json
import os
import sys

import click

from jobledger.daemons.storage.store import DB_NAME, Store
from jobledger.eventcore.errors import JobledgerError
from jobledger.cli.output import echo_json
from jobledger.cli.params import MOMENT, POSITION
from jobledger.cli.progress import bar, quiet_option
from jobledger.cli.where import local_dir_option
from jobledger.tracking.localzone import LOCAL_TZINFO

__all__ = ["journal", "replay", "audit"]



def _open_store(local_dir: str, must_exist: bool = True) -> Store:
    """The pool's store; read-only (no queue catch-up) when it must exist already."""
    if must_exist and not os.path.exists(os.path.join(local_dir, DB_NAME)):
        raise click.ClickException(f"no journal in {local_dir} ({DB_NAME} is missing)")
    try:
        return Store(local_dir, durability="fsync", readonly=must_exist)
    except JobledgerError as exc:
        raise click.ClickException(str(exc)) from None


@click.group()
def journal() -> None:
    """The pool's journal: import logs into it, export its events."""


@journal.command("import")
@click.argument("logs", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=str))
@local_dir_option
@click.option("--year", type=int, default=None,
              help="Year for legacy MM/DD timestamps (default: this year, as HTCondor reads).")
@click.option("--batch", type=click.IntRange(1), default=5000, show_default=True,
              help="Events per journal transaction.")
@quiet_option
def import_(logs, pool, year, batch, quiet):
    """Import HTCondor user logs or global event logs (text, JSON, XML).

    Idempotent: each event is added once, however often a log is imported
    (also after an interrupted import).  A progress bar on a terminal.
    """
    local_dir = str(pool.local_dir)
    from jobledger.daemons.client.importer import import_log, reader_state
    store = _open_store(local_dir, must_exist=False)
    failed = []
    progress = bar(len(logs), "importing", "log", quiet)
    try:
        for path in logs:
            def step(count, total, path=path):
                progress.set_postfix_str(f"{os.path.basename(path)}: {count:,}/{total:,} events")
                progress.update(0)
            try:
                result = import_log(store, path, reader_state(year), batch=batch, progress=step)
            except JobledgerError as exc:
                failed.append(str(exc))
                click.echo(f"error: {exc}", err=True)
                progress.update(1)
                continue
            progress.update(1)
            progress.write(f"{path}: {result.events} events, {result.added} new")
            for offset, reason in result.garbled:
                click.echo(f"warning: {path} at byte {offset}: not an event ({reason})", err=True)
    finally:
        progress.close()
        store.close()
    if failed:
        raise click.ClickException(f"{len(failed)} of {len(logs)} logs could not be imported")


@journal.command("export")
@local_dir_option
@click.option("--format", "fmt", type=click.Choice(["text", "json", "xml"]), default="text",
              show_default=True, help="User-log format to write the events in.")
@click.option("--utc", is_flag=True, help="Text timestamps in UTC with a Z (default: local time).")
def export(pool, fmt, utc):
    """Write every event of the journal to stdout as one event log."""
    local_dir = str(pool.local_dir)
    from jobledger.eventcore.codecs.userlog import TextFormat, render
    from jobledger.eventcore.events import event_from_dict
    store = _open_store(local_dir)
    options = TextFormat(utc=True) if utc else TextFormat()
    tz = datetime.timezone.utc if utc else LOCAL_TZINFO
    out = sys.stdout
    try:
        for entry in store.entries():
            if entry.type == "event":
                out.write(render(event_from_dict(entry.payload["event"]), fmt, options, tz))
    finally:
        store.close()


@journal.command("queue-log")
@local_dir_option
@click.option("--position", type=POSITION, default=None, help="The queue at this journal position.")
def queue_log(pool, position):
    """Write the queue as HTCondor's compacted job_queue.log text (for diffing)."""
    local_dir = str(pool.local_dir)
    from jobledger.eventcore.projections.queuelog import queue_log_text
    from jobledger.eventcore.projections.replay import replay as fold
    store = _open_store(local_dir)
    try:
        entries = list(store.entries(limit=1))
        created = int(entries[0].time) if entries else 0
        queue = fold(store.entries(), position=position)
        next_cluster = store.next_cluster_id()
    except JobledgerError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        store.close()
    click.echo(queue_log_text(queue, created, next_cluster=next_cluster), nl=False)


@journal.command("accept-loss")
@local_dir_option
def accept_loss(pool):
    """Start again from the journal as it is, after it lost committed records.

    The pool refuses to start on a journal behind its high-water mark
    (spool/journal.hwm), or on one whose record chain is damaged; this moves
    the mark back, or cuts the journal at its first damaged record (keeping
    everything before it, the old file saved under spool/), and says what was
    given up.  Jobs whose records were lost run again; cluster ids continue
    after the highest ever used.
    """
    local_dir = str(pool.local_dir)
    from jobledger.daemons.journal_loss import accept_loss as accept
    said: list[str] = []
    try:
        old, new = accept(local_dir, said)
    except JobledgerError as exc:
        raise click.ClickException(str(exc)) from None
    for line in said:
        click.echo(line)
    lost = f"positions {new.position + 1}..{old.position} given up" if old and old.position > new.position \
        else "nothing was lost" if not said else "the rest given up"
    click.echo(f"high-water mark now at position {new.position} ({lost}); "
               f"new clusters start after {new.cluster}")


@journal.command("sql")
@click.argument("statement")
@local_dir_option
@click.option("--json", "as_json", is_flag=True, help="A JSON array of objects, one a row.")
@click.option("--csv", "as_csv", is_flag=True, help="CSV with a header line.")
def sql(statement, pool, as_json, as_csv):
    """Run one read-only SQL statement on the journal and print its rows.

    The tables are in schemas/store.sql (journal, queue_jobs, queue_clusters,
    history, ...).  Statements that would change anything are refused.
    Output is a table unless --json or --csv.
    """
    local_dir = str(pool.local_dir)
    from jobledger.daemons.storage.sql import query
    if as_json and as_csv:
        raise click.UsageError("--json and --csv exclude each other")
    try:
        columns, rows = query(os.path.join(local_dir, DB_NAME), statement)
    except JobledgerError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        echo_json([dict(zip(columns, map(_json_value, row))) for row in rows])
    elif as_csv:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)
    else:
        click.echo(_table(columns, rows))


def _json_value(value):
    return value.hex() if isinstance(value, bytes) else value


def _table(columns: list[str], rows: list[tuple]) -> str:
    """Columns padded to their widest cell, numbers to the right."""
    cells = [[("" if v is None else str(v)) for v in row] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    numeric = [all(isinstance(row[i], (int, float)) or row[i] is None for row in rows)
               for i in range(len(columns))]

    def line(values):
        return "  ".join(v.rjust(w) if n else v.ljust(w)
                         for v, w, n in zip(values, widths, numeric)).rstrip()
    out = [line(columns), "  ".join("-" * w for w in widths)] + [line(r) for r in cells]
    return "\n".join(out)


@journal.command("status-diagram")
def status_diagram():
    """Print the job status table as a Mermaid state diagram (for the docs)."""
    from jobledger.eventcore.status import state_diagram
    click.echo(state_diagram())


def _when(value) -> str:
    if not value or value < 0:
        return "-"
    return datetime.datetime.fromtimestamp(value).strftime("%m/%d %H:%M")


@click.command()
@local_dir_option
@click.option("--as-of", "as_of", default=None, type=MOMENT, help="A moment (Unix seconds or ISO-8601).")
@click.option("--position", type=POSITION, default=None, help="A journal position.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per job.")
def replay(pool, as_of, position, as_json):
    """The queue as it stood at a position or a moment (default: now)."""
    local_dir = str(pool.local_dir)
    from jobledger.eventcore.projections.replay import STATUS_LETTER, replay as fold, summary
    if as_of is not None and position is not None:
        raise click.UsageError("give --as-of or --position, not both")
    moment = as_of
    store = _open_store(local_dir)
    try:
        queue = fold(store.entries(), position=position, as_of=moment)
    except JobledgerError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        store.close()
    rows = [summary(c, p, queue) for (c, p), _ in queue.jobs()]
    if as_json:
        for row in rows:
            click.echo(json.dumps(row, sort_keys=True))
        return
    click.echo(f"{'ID':>10} {'OWNER':<12} {'SUBMITTED':<11} {'ST':<2} {'ENTERED':<11} "
               f"{'EXIT':>4}  HOLD REASON")
    for r in rows:
        exit_code = r.get("ExitCode", "")
        click.echo(f"{r['cluster']:>7}.{r['proc']:<2} {r.get('Owner', '-'):<12} "
                   f"{_when(r.get('QDate')):<11} {STATUS_LETTER[r['JobStatus']]:<2} "
                   f"{_when(r.get('EnteredCurrentStatus')):<11} {exit_code!s:>4}  "
                   f"{r.get('HoldReason', '')}")
    counts = {}
    for r in rows:
        counts[r["Status"]] = counts.get(r["Status"], 0) + 1
    click.echo(f"\n{len(rows)} jobs; " + ", ".join(f"{n} {k.lower()}" for k, n in sorted(counts.items())))


@click.command()
@local_dir_option
@click.option("--json", "as_json", is_flag=True, help="The report as one JSON object.")
@quiet_option
def audit(pool, as_json, quiet):
    """Check checksums, continuity, transitions, and every log against the journal.
    A progress bar of its stages on a terminal."""
    local_dir = str(pool.local_dir)
    from jobledger.daemons.audit import STAGES, audit as run_audit
    progress = bar(len(STAGES), "auditing", "stage", quiet)

    def stage(name: str) -> None:            # the stages before this one are done
        progress.set_postfix_str(name)
        progress.update(STAGES.index(name) - progress.n)
    try:
        report = run_audit(local_dir, progress=stage)
    except JobledgerError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        progress.close()
    if as_json:
        echo_json({"ok": report.ok, "counts": report.counts,
                   "findings": [f._asdict() for f in report.findings], "notes": report.notes})
    else:
        for finding in report.findings:
            click.echo(str(finding))
        for note in report.notes:
            click.echo(f"note: {note}")
        counts = ", ".join(f"{v} {k}" for k, v in report.counts.items())
        click.echo(f"{'OK' if report.ok else 'FAILED'}: {len(report.findings)} findings ({counts})")
    if not report.ok:
        sys.exit(1)
