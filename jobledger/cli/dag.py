"""``jobledger dag``: submit a DAG, see how it is doing, inspect its rescue DAG.

    jobledger dag submit DAGFILE [--maxjobs N] [--maxidle N] [--maxpre N] [--maxpost N]
                                 [--force] [--no-submit] [--batch-name NAME] [--dorescuefrom N]
    jobledger dag status DAGMAN_CLUSTER
    jobledger dag rescue DAGFILE

``submit`` is condor_submit_dag: it parses the DAG (an error names
file:line and nothing is submitted), writes ``DAGFILE.condor.sub`` and
queues the DAGMan job to the pool in ``--local-dir``; ``--no-submit`` only
writes the file.  ``status`` shows the DAGMan job and its node jobs by
state.  ``rescue`` prints which rescue DAG a new submit would use and the
nodes it marks DONE.
"""

from __future__ import annotations

import os
from collections import Counter

import click

from jobledger.eventcore.errors import DagError, HTCondorException, SubmitError
from jobledger.cli.output import echo_json, json_option
from jobledger.cli.where import Pool, local_dir_option

STATUS_NAMES = {1: "Idle", 2: "Running", 3: "Removed", 4: "Completed", 5: "Held", 6: "Transferring",
                7: "Suspended"}


@click.group("dag")
def dag() -> None:
    """Run workflows of dependent jobs (DAGMan)."""


def submit_dag(dag_file: str, options: dict, pool: Pool, no_submit: bool = False) -> str:
    """condor_submit_dag's path (the CLI and condor_submit_dag call this); the line to print."""
    from jobledger.daemons.submit_env import Submit
    try:
        sub = Submit.from_dag(dag_file, options)
    except (DagError, SubmitError) as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise click.ClickException(f"cannot write {dag_file}.condor.sub: {exc.strerror or exc}") from None
    if no_submit:
        return f"File for submitting this DAG to HTCondor           : {dag_file}.condor.sub"
    from jobledger.cli.readers import schedd_of
    schedd = schedd_of(pool)
    try:
        result = schedd.submit(sub)
    except HTCondorException as exc:
        raise click.ClickException(f"the schedd refused the DAGMan job: {exc}") from None
    return f"1 job(s) submitted to cluster {result.cluster()}."


@dag.command("submit")
@click.argument("dag_file", type=click.Path(dir_okay=False))
@click.option("--maxjobs", type=click.IntRange(0), help="At most N node jobs submitted at once.")
@click.option("--maxidle", type=click.IntRange(0), help="Submit no more while N node procs are idle.")
@click.option("--maxpre", type=click.IntRange(0), help="At most N PRE scripts at once.")
@click.option("--maxpost", type=click.IntRange(0), help="At most N POST scripts at once.")
@click.option("--force", is_flag=True, help="Ignore rescue DAGs: run every node again.")
@click.option("--dorescuefrom", type=click.IntRange(1), help="Use rescue DAG number N.")
@click.option("--batch-name", help="The JobBatchName of the DAG's jobs.")
@click.option("--no-submit", is_flag=True, help="Only write DAG_FILE.condor.sub.")
@local_dir_option
def submit(dag_file, maxjobs, maxidle, maxpre, maxpost, force, dorescuefrom, batch_name, no_submit,
           pool) -> None:
    """Submit DAG_FILE to the pool as a DAGMan job (condor_submit_dag)."""
    options = {"maxjobs": maxjobs, "maxidle": maxidle, "maxpre": maxpre, "maxpost": maxpost,
               "dorescuefrom": dorescuefrom, "batch_name": batch_name}
    options = {k: v for k, v in options.items() if v is not None}
    if force:
        options["force"] = True
    click.echo(submit_dag(dag_file, options, pool, no_submit))


@dag.command("status")
@click.argument("cluster", type=click.IntRange(1))
@local_dir_option
@json_option("The DAGMan job and its nodes as one JSON object.")
def status(cluster: int, pool: Pool, as_json: bool) -> None:
    """The DAGMan job CLUSTER and its node jobs, by state (also of a stopped pool)."""
    from jobledger.cli.readers import reader_of
    schedd = reader_of(pool)
    wanted = ["ClusterId", "ProcId", "JobStatus", "DAGNodeName", "ExitCode", "JobBatchName"]
    try:
        own = schedd.query(f"ClusterId == {cluster}", wanted) or schedd.history(f"ClusterId == {cluster}", wanted)
        nodes = schedd.query(f"DAGManJobId == {cluster}", wanted) + \
            schedd.history(f"DAGManJobId == {cluster}", wanted)
    except HTCondorException as exc:
        raise click.ClickException(str(exc)) from None
    if not own:
        raise click.ClickException(f"no DAGMan job {cluster} in the queue or the history")
    me = own[0]
    state = STATUS_NAMES.get(me.get("JobStatus"), "?")
    latest: dict = {}
    for ad in nodes:
        name = ad.get("DAGNodeName", "?")
        if name not in latest or ad["ClusterId"] > latest[name]["ClusterId"]:
            latest[name] = ad
    if as_json:
        echo_json({"cluster": cluster, "batch_name": me.get("JobBatchName", ""), "status": state,
                   "exit_code": me.get("ExitCode"),
                   "nodes": [{"name": name, "cluster": latest[name]["ClusterId"],
                              "status": STATUS_NAMES.get(latest[name].get("JobStatus"), "?"),
                              "exit_code": latest[name].get("ExitCode")} for name in sorted(latest)]})
        return
    click.echo(f"DAG {cluster} ({me.get('JobBatchName', '')}): {state}"
               + (f", exit code {me['ExitCode']}" if "ExitCode" in me else ""))
    counts = Counter(STATUS_NAMES.get(ad.get("JobStatus"), "?") for ad in latest.values())
    click.echo(f"{len(latest)} node(s) with jobs: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    for name in sorted(latest):
        ad = latest[name]
        code = f" exit {ad['ExitCode']}" if "ExitCode" in ad else ""
        click.echo(f"  {name:<24} {ad['ClusterId']:>8} {STATUS_NAMES.get(ad.get('JobStatus'), '?')}{code}")


@dag.command("rescue")
@click.argument("dag_file", type=click.Path(dir_okay=False))
def rescue(dag_file: str) -> None:
    """The rescue DAG a new submit of DAG_FILE would use, and the nodes it marks DONE."""
    from jobledger.daemons.dagman.files import newest_rescue, read_bytes
    from jobledger.eventcore.dag import parse_dag
    try:
        path = newest_rescue(dag_file)
        if path is None:
            click.echo(f"no rescue DAG for {dag_file}: a submit runs every node")
            return
        parsed = parse_dag(dag_file, read_bytes, rescue=path)
    except DagError as exc:
        raise click.ClickException(str(exc)) from None
    done = [name for name, node in parsed.nodes.items() if node.done]
    click.echo(f"{os.path.basename(path)}: {len(done)} of {len(parsed.nodes)} node(s) DONE")
    for name in done:
        click.echo(f"  DONE {name}")
