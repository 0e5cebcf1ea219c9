"""``jobledger history``: jobs that left the queue, newest first (condor_history)."""

from __future__ import annotations

import click

from jobledger.cli.params import CONSTRAINT
from jobledger.cli.output import ad_json, echo_json, json_option
from jobledger.cli.readers import reader_of
from jobledger.cli.where import local_dir_option
from jobledger.cli.q import STATUS_LETTER, _when


@click.command()
@local_dir_option
@click.option("-constraint", "--constraint", "constraint", default=None, type=CONSTRAINT,
              help="A ClassAd constraint.")
@click.option("-match", "--match", "match", type=int, default=-1, help="At most this many jobs.")
@click.option("-af", "--af", "autoformat", is_flag=True,
              help="Print only the attributes named as arguments (condor_history -af).")
@click.option("-long", "--long", "long_", is_flag=True, help="Whole job ads.")
@json_option("Whole job ads as a JSON list.")
@click.argument("attributes", nargs=-1)
def history(pool, constraint, match, autoformat, long_, as_json, attributes):
    """Show completed and removed jobs, newest first (also of a stopped pool)."""
    schedd = reader_of(pool)
    if as_json:
        echo_json([ad_json(ad) for ad in schedd.history(constraint, list(attributes), match)])
        return
    if autoformat:
        names = list(attributes)
        if not names:
            raise click.UsageError("-af needs attribute names")
        for ad in schedd.history(constraint, names, match):
            click.echo(" ".join(str(ad.eval(n)) if n in ad else "undefined" for n in names))
        return
    if long_:
        click.echo("\n\n".join(ad.printOld().rstrip("\n") for ad in schedd.history(constraint, [], match)))
        return
    click.echo(f"{'ID':>9} {'OWNER':<12} {'SUBMITTED':<11} ST {'COMPLETED':<11} {'EXIT':>4} CMD")
    for ad in schedd.history(constraint, ["ClusterId", "ProcId", "Owner", "QDate", "JobStatus",
                                          "CompletionDate", "ExitCode", "Cmd"], match):
        click.echo(f"{ad['ClusterId']:>7}.{ad['ProcId']:<1} {ad.get('Owner', '-'):<12} "
                   f"{_when(ad.get('QDate')):<11} {STATUS_LETTER.get(ad.get('JobStatus'), '?'):<2} "
                   f"{_when(ad.get('CompletionDate')):<11} {ad.get('ExitCode', ''):>4} {ad.get('Cmd', '')}")
