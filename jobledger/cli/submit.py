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

Without ``--dry-run`` the jobs go to a pool's schedd; that needs the pool
(``submit_to_pool`` below is where it plugs in).
"""

from __future__ import annotations

import getpass
import sys

import click

from eventcore.errors import SubmitError


def load_description(path: str, appends: tuple[str, ...]):
    """The ``Submit`` for FILE (``-`` = stdin) with ``-a`` commands added
    before its queue statement."""
    from jobledger import Submit
    if path == "-":
        text = sys.stdin.read()
    else:
        try:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
        except OSError as exc:
            raise click.ClickException(f"cannot read {path}: {exc.strerror or exc}") from None
    sub = Submit(text)
    for line in appends:
        extra = Submit(line)
        for key, value in extra.items():
            sub[key] = value
    return sub


def submit_to_pool(sub, queue: str | None) -> str:
    """Submit to the local pool's schedd; returns the line to print."""
    raise click.ClickException("submitting needs a running pool, and this command cannot reach one yet; "
                               "use --dry-run to print the job ads instead")


@click.command("submit")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--dry-run", is_flag=True, help="Print the job ads; submit nothing.")
@click.option("--json", "as_json", is_flag=True, help="With --dry-run: one JSON array of ads.")
@click.option("-a", "--append", "appends", multiple=True, metavar="'NAME = VALUE'",
              help="A submit command added to the description (repeatable).")
@click.option("--queue", default=None, help="Replace the queue statement (e.g. '3' or 'x in (a b)').")
@click.option("--cluster", default=1, show_default=True, help="With --dry-run: the cluster id to show.")
def submit(file: str, dry_run: bool, as_json: bool, appends: tuple[str, ...], queue: str | None,
           cluster: int) -> None:
    """Submit the jobs of the submit description FILE (or print them with --dry-run)."""
    try:
        sub = load_description(file, appends)
        if not dry_run:
            click.echo(submit_to_pool(sub, queue))
            return
        plan = sub.cluster(clusterid=cluster, queue=queue, owner=getpass.getuser())
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
