"""``jobledger submit``: turn a submit description into jobs.

    jobledger submit FILE --dry-run [--json] [-a 'name = value'...]
                          [--queue 'queue args'] [--cluster N]

``--dry-run`` prints the job ads the description makes, without a pool:
each proc's full ad in the old ClassAd form (``condor_q -long``), ads
separated by a blank line, or with ``--json`` one JSON array.  FILE ``-``
reads standard input; relative paths in the description (``queue ... from``,
``include :``, ``matching``, ``initialdir``) are relative to the current
directory, as with condor_submit.  ``-a`` appends a command (like
condor_submit's ``-append``); ``--queue`` replaces the queue statement.

Without ``--dry-run`` the jobs go to the schedd of the pool in
``--local-dir`` (``submit_to_pool``), which prints "N job(s) submitted to
cluster C."; with no pool running it fails with a message saying so.
"""

from __future__ import annotations

import getpass
import sys

import click

from jobledger.eventcore.errors import SubmitError
from jobledger.eventcore.submit.text import MAX_JOBS_PER_SUBMISSION
from jobledger.cli.progress import quiet_option
from jobledger.cli.where import Pool, local_dir_option


def load_description(path: str, appends: tuple[str, ...]):
    """The ``Submit`` for FILE (``-`` = stdin) with ``-a`` commands added
    before its queue statement."""
    from jobledger.daemons.input_files import read_stream_text
    from jobledger.daemons.client.submit import read_submit_file
    from jobledger import Submit
    if path == "-":
        text = read_stream_text(sys.stdin, "<stdin>")
    else:
        try:
            text = read_submit_file(path)
        except OSError as exc:
            raise click.ClickException(f"cannot read {path}: {exc.strerror or exc}") from None
    sub = Submit(text)
    for line in appends:
        extra = Submit(line)
        for key, value in extra.items():
            sub[key] = value
    return sub


def max_jobs_per_submission() -> int:
    """MAX_JOBS_PER_SUBMISSION of the configuration this process loaded."""
    from jobledger import param
    return int(param.get("MAX_JOBS_PER_SUBMISSION", MAX_JOBS_PER_SUBMISSION))


def submit_to_pool(sub, queue: str | None, pool: Pool, quiet: bool = True) -> str:
    """Submit to the schedd of ``pool``; returns the line to print.  A big cluster (sent
    in chunks) draws a bar of the procs sent unless ``quiet``."""
    import warnings
    from jobledger.cli.progress import bar
    from jobledger.cli.readers import schedd_of
    from jobledger.eventcore.errors import HTCondorException
    schedd = schedd_of(pool)
    progress = None

    def sent(done: int, total: int) -> None:
        nonlocal progress
        if progress is None:
            progress = bar(total, "submitting", "job", quiet)
        progress.update(done - progress.n)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = schedd._submit_description(sub, 0, False, None, queue, progress=sent)
    except HTCondorException as exc:
        raise click.ClickException(f"the schedd refused the jobs: {exc}") from None
    finally:
        if progress is not None:
            progress.close()
    for warning in caught:
        click.echo(f"WARNING: {warning.message}", err=True)
    return f"{result.num_procs()} job(s) submitted to cluster {result.cluster()}."


@click.command("submit")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--dry-run", is_flag=True, help="Print the job ads; submit nothing.")
@click.option("--json", "as_json", is_flag=True, help="With --dry-run: one JSON array of ads.")
@click.option("-a", "--append", "appends", multiple=True, metavar="'NAME = VALUE'",
              help="A submit command added to the description (repeatable).")
@click.option("--queue", default=None, help="Replace the queue statement (e.g. '3' or 'x in (a b)').")
@click.option("--cluster", default=1, show_default=True, help="With --dry-run: the cluster id to show.")
@local_dir_option
@quiet_option
def submit(file: str, dry_run: bool, as_json: bool, appends: tuple[str, ...], queue: str | None,
           cluster: int, pool: Pool, quiet: bool) -> None:
    """Submit the jobs of the submit description FILE (or print them with --dry-run).
    A big cluster draws a progress bar on a terminal."""
    try:
        sub = load_description(file, appends)
        if not dry_run:
            click.echo(submit_to_pool(sub, queue, pool, quiet))
            return
        plan = sub.cluster(clusterid=cluster, queue=queue, owner=getpass.getuser(),
                           max_jobs=max_jobs_per_submission())
        ads = list(plan.ads())
    except SubmitError as exc:
        where = exc.source if exc.source != "<submit>" or file == "-" else file
        raise click.ClickException(str(SubmitError(exc.message, exc.line, exc.text, where))) from None
    if as_json:
        click.echo("[" + ",\n".join(ad.printJson().rstrip("\n") for ad in ads) + "]")
    else:
        click.echo("\n".join(ad.printOld() for ad in ads), nl=False)
    for message in plan.warnings:
        click.echo(f"WARNING: {message}", err=True)
