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
from jobledger.cli.progress import quiet_option
from jobledger.cli.where import Pool, local_dir_option
from jobledger.eventcore.status import STATUS_NAMES



@click.group("dag")
def dag() -> None:
    """Run workflows of dependent jobs (DAGMan)."""


def submit_dag(dag_file: str, options: dict, pool: Pool, no_submit: bool = False, quiet: bool = True) -> str:
    """condor_submit_dag's path (the CLI and condor_submit_dag call this); the line to print.
    Unless ``quiet``, a bar of its steps (checking the DAG, writing, submitting) on a terminal."""
    from jobledger.cli.progress import bar
    with bar(1 if no_submit else 2, "DAG submit", "step", quiet) as progress:
        progress.set_postfix_str(f"checking {os.path.basename(dag_file)}")
        sub = _checked_submit_file(dag_file, options)
        if no_submit:
            return f"File for submitting this DAG to HTCondor           : {dag_file}.condor.sub"
        progress.update(1)
        progress.set_postfix_str("submitting the DAGMan job")
        return _submit_dagman(sub, pool)


def _checked_submit_file(dag_file: str, options: dict):
    """The DAG parsed and checked, its DAG_FILE.condor.sub written; the Submit of it."""
    from jobledger.daemons.dagman.submit_dag import DagOutputExists, write_submit_file
    from jobledger.daemons.client.submit import Submit
    try:
        return Submit(write_submit_file(dag_file, options))
    except DagOutputExists as exc:
        raise click.ClickException(exc.explained(
            '- Use the "--force" option to run the DAG again from the start')) from None
    except (DagError, SubmitError) as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise click.ClickException(f"cannot write {dag_file}.condor.sub: {exc.strerror or exc}") from None


def _submit_dagman(sub, pool: Pool) -> str:
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
@click.option("--force", is_flag=True,
              help="Overwrite an earlier run's files and set its rescue DAGs aside: run every node again.")
@click.option("--dorescuefrom", type=click.IntRange(1), help="Use rescue DAG number N.")
@click.option("--batch-name", help="The JobBatchName of the DAG's jobs.")
@click.option("--no-submit", is_flag=True, help="Only write DAG_FILE.condor.sub.")
@local_dir_option
@quiet_option
def submit(dag_file, maxjobs, maxidle, maxpre, maxpost, force, dorescuefrom, batch_name, no_submit,
           pool, quiet) -> None:
    """Submit DAG_FILE to the pool as a DAGMan job (condor_submit_dag).  A bar of its
    steps on a terminal (a DAG of 10^5 nodes takes seconds to check)."""
    options = {"maxjobs": maxjobs, "maxidle": maxidle, "maxpre": maxpre, "maxpost": maxpost,
               "dorescuefrom": dorescuefrom, "batch_name": batch_name}
    options = {k: v for k, v in options.items() if v is not None}
    if force:
        options["force"] = True
    click.echo(submit_dag(dag_file, options, pool, no_submit, quiet))


@dag.command("status")
@click.argument("cluster", type=click.IntRange(1))
@local_dir_option
@json_option("The DAGMan job and its nodes as one JSON object.")
def status(cluster: int, pool: Pool, as_json: bool) -> None:
    """The DAGMan job CLUSTER and its DAG's nodes: each node's latest job, and the
    nodes that never ran (also of a stopped pool)."""
    from jobledger.cli.readers import reader_of
    schedd = reader_of(pool)
    wanted = ["ClusterId", "ProcId", "JobStatus", "DAGNodeName", "ExitCode", "JobBatchName"]
    mine = wanted + ["Iwd", "Arguments", "DAG_Status", "DAG_NodesTotal"]
    try:
        own = schedd.query(f"ClusterId == {cluster}", mine) or schedd.history(f"ClusterId == {cluster}", mine)
        nodes = schedd.query(f"DAGManJobId == {cluster}", wanted) + \
            schedd.history(f"DAGManJobId == {cluster}", wanted)
    except HTCondorException as exc:
        raise click.ClickException(str(exc)) from None
    if not own:
        raise click.ClickException(f"no DAGMan job {cluster} in the queue or the history")
    me = own[0]
    state = STATUS_NAMES.get(me.get("JobStatus", 0), "?")
    latest: dict = {}
    for ad in nodes:
        name = ad.get("DAGNodeName", "?")
        if name not in latest or ad["ClusterId"] > latest[name]["ClusterId"]:
            latest[name] = ad
    never = [name for name in dag_nodes(me) if name not in latest]
    if as_json:
        echo_json({"cluster": cluster, "batch_name": me.get("JobBatchName", ""), "status": state,
                   "exit_code": me.get("ExitCode"), "state": dag_state(me),
                   "nodes": [{"name": name, "cluster": latest[name]["ClusterId"],
                              "status": STATUS_NAMES.get(latest[name].get("JobStatus"), "?"),
                              "exit_code": latest[name].get("ExitCode")} for name in sorted(latest)]
                   + [{"name": name, "cluster": None, "status": "never ran", "exit_code": None}
                      for name in never]})
        return
    click.echo(f"DAG {cluster} ({me.get('JobBatchName', '')}): {dag_state(me)}")
    counts = Counter(STATUS_NAMES.get(ad.get("JobStatus"), "?") for ad in latest.values())
    click.echo(f"{len(latest)} node(s) with jobs: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    if never:
        click.echo(f"{len(never)} node(s) never ran: {' '.join(never)}")
    for name in sorted(latest):
        ad = latest[name]
        code = f" exit {ad['ExitCode']}" if "ExitCode" in ad else ""
        click.echo(f"  {name:<24} {ad['ClusterId']:>8} {STATUS_NAMES.get(ad.get('JobStatus'), '?')}{code}")
    for name in never:
        click.echo(f"  {name:<24} {'-':>8} never ran")


# DAG_Status values (HTCondor's dagman_classad / htcondor dag status wording)
DAG_STATUS = {1: "an error occurred", 2: "at least one node failed", 3: "aborted by a node's ABORT-DAG-ON value",
              4: "removed", 5: "a cycle was found", 6: "halted"}


def dag_state(me: dict) -> str:
    """How the DAGMan job is doing: a finished DAG with a non-zero exit code failed."""
    state = STATUS_NAMES.get(me.get("JobStatus", 0), "?")
    if "ExitCode" not in me:
        return state
    code = me["ExitCode"]
    if me.get("JobStatus") == 4 and code != 0:
        why = DAG_STATUS.get(me.get("DAG_Status", 0))
        return f"Failed, exit code {code}" + (f" ({why})" if why else "")
    return f"{state}, exit code {code}"


def dag_nodes(me: dict) -> list[str]:
    """The node names of the DAG the DAGMan job ``me`` runs (its -Dag file in its Iwd),
    in the file's order; [] when the file cannot be read any more."""
    from jobledger.daemons.dagman.files import read_bytes
    from jobledger.eventcore.dagman import parse_dag
    from jobledger.eventcore.submit.args import split_v2
    try:
        args = split_v2('"' + str(me.get("Arguments", "")).replace('"', '""') + '"', "arguments")
    except SubmitError:
        return []
    iwd = str(me.get("Iwd", ""))
    if "-Dag" not in args[:-1] or not iwd:
        return []
    try:
        parsed = parse_dag(args[args.index("-Dag") + 1], lambda path: read_bytes(os.path.join(iwd, path)))
    except (DagError, OSError):
        return []
    return list(parsed.nodes)


@dag.command("rescue")
@click.argument("dag_file", type=click.Path(dir_okay=False))
def rescue(dag_file: str) -> None:
    """The rescue DAG a new submit of DAG_FILE would use, and the nodes it marks DONE."""
    from jobledger.daemons.dagman.files import newest_rescue, read_bytes
    from jobledger.eventcore.dagman import parse_dag
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
