"""``jobledger web``: a live and replayable picture of a run in the browser.

    jobledger web [--local-dir DIR | --journal FILE | --log FILE...]
                  [--host 127.0.0.1] [--port 9680]
                  [--report FILE] [--trace FILE] [--at N]

What it pictures (first that applies): the user logs given with ``--log``
(HTCondor's or ours, imported into a journal of their own in a temporary
directory), the journal file ``--journal``, or the pool the common rule
finds (``jobledger.cli.where``: ``--local-dir``, ``$CONDOR_CONFIG``, the
personal pool).  It serves on 127.0.0.1 by default and
only reads.  ``--report`` writes the self-contained HTML report and
``--trace`` the Chrome-trace (Perfetto) JSON, as of ``--at`` (default: the
journal's head), and exits without serving.  The work is in jobledger.web.
"""

from __future__ import annotations

import json
import os
import tempfile

import click

from jobledger.eventcore.errors import JobledgerError
from jobledger.cli.params import POSITION
from jobledger.cli.progress import quiet_option

__all__ = ["command"]


def _journal_path(local_dir: str | None, journal: str | None) -> str:
    """The journal to picture: ``--journal``, else the pool the common rule finds
    (``jobledger.cli.where``: ``--local-dir``, ``$CONDOR_CONFIG``, the personal pool)."""
    if journal:
        return journal
    from jobledger.cli.where import NoPool, find_pool
    try:
        pool = find_pool(local_dir)
    except NoPool as exc:
        raise click.ClickException(str(exc)) from None
    if not pool.journal.exists():
        raise click.ClickException(f"no journal in {pool.local_dir} ({pool.journal.name} is missing; "
                                   f"the pool was found by {pool.how})")
    return str(pool.journal)


def _need_web():
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise click.ClickException("jobledger web needs the [web] extra: "
                                   "pip install 'jobledger[web]'") from None


@click.command("web")
@click.option("--local-dir", "local_dir", type=click.Path(file_okay=False, path_type=str),
              help="The pool's LOCAL_DIR (default: LOCAL_DIR of $CONDOR_CONFIG, else ~/.condor/personal).")
@click.option("--journal", type=click.Path(dir_okay=False, exists=True, path_type=str),
              help="A journal file (journal.sqlite) to picture.")
@click.option("--log", "logs", multiple=True, type=click.Path(dir_okay=False, exists=True, path_type=str),
              help="HTCondor user logs or event logs to picture (repeatable).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to serve on.")
@click.option("--port", type=click.IntRange(0, 65535), default=9680, show_default=True,
              help="Port to serve on (0: any free port).")
@click.option("--report", type=click.Path(dir_okay=False, writable=True, path_type=str),
              help="Write the static HTML report here and exit.")
@click.option("--trace", type=click.Path(dir_okay=False, writable=True, path_type=str),
              help="Write the Chrome-trace (Perfetto) JSON here and exit.")
@click.option("--at", type=POSITION, default=None, help="The report's or trace's journal position.")
@quiet_option
def command(local_dir, journal, logs, host, port, report, trace, at, quiet):
    """A live and replayable picture of a run, served to the browser."""
    from jobledger.web.source import Source, imported
    from jobledger.tracking.localzone import LOCAL_TZINFO
    with tempfile.TemporaryDirectory(prefix="jobledger-web-") as scratch:
        if logs:
            from jobledger.cli.progress import bar
            progress = bar(len(logs), "importing", "log", quiet)
            try:
                path, warnings = imported(list(logs), scratch, progress=lambda _: progress.update(1))
            finally:
                progress.close()
            for warning in warnings:
                click.echo(f"warning: {warning}", err=True)
            audit_dir = None
        else:
            path = _journal_path(local_dir, journal)
            audit_dir = os.path.dirname(os.path.abspath(path))
        try:
            source = Source(path, tz=LOCAL_TZINFO)
        except JobledgerError as exc:
            raise click.ClickException(str(exc)) from None
        try:
            if report or trace:
                _write(source, report, trace, at, audit_dir)
                return
            _need_web()
            from jobledger.web.app import make_app, serve
            app = make_app(source, audit_dir, allowed_hosts=[host])
            try:
                serve(app, host, port, ready=lambda url: click.echo(
                    f"jobledger web: {url} (journal position {source.live.position}; Ctrl-C stops)"))
            except OSError as exc:
                raise click.ClickException(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None
        finally:
            source.close()


def _write(source, report, trace, at, audit_dir) -> None:
    from jobledger.eventcore.projections.trace import chrome_trace
    from jobledger.web.report import report_html
    from jobledger.web.verdict import audit_verdict
    if report:
        verdict = audit_verdict(audit_dir, source.live.position)
        with open(report, "w", encoding="utf-8") as handle:
            handle.write(report_html(source, at, verdict))
        click.echo(f"{report}: the report as of journal position {at if at is not None else source.live.position}")
    if trace:
        with open(trace, "w", encoding="utf-8") as handle:
            json.dump(chrome_trace(source.at(at, None)), handle, separators=(",", ":"))
        click.echo(f"{trace}: Chrome trace (open it in Perfetto or chrome://tracing)")
