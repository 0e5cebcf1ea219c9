"""``jobledger pool start|stop|status``: a personal pool that outlives the command.

The pool is found as every command finds it (``jobledger.cli.where``:
``--local-dir``, else LOCAL_DIR of $CONDOR_CONFIG, else ~/.condor/personal).
``start`` says where the pool is, which daemons run, and the line that
points HTCondor's tools at it (``export CONDOR_CONFIG=...``); ``status``
answers on a stopped pool too (exit status 3 then, as an LSB ``status`` does).
"""

from __future__ import annotations

from pathlib import Path

import click

from jobledger.eventcore.errors import HTCondorException
from jobledger.cli.output import echo_json, json_option
from jobledger.cli.readers import schedd_of
from jobledger.cli.where import default_dir, local_dir_option

__all__ = ["pool", "local_dir_option", "schedd_of", "DEFAULT_DIR"]

DEFAULT_DIR = default_dir()
STOPPED_STATUS = 3


@click.group()
def pool() -> None:
    """Start, stop or inspect a personal pool."""


def daemons_of(local_dir: Path) -> dict | None:
    """The master's account of its daemons (name -> pid, running, restarts); None when
    no master answers."""
    from jobledger.daemons import ipc
    try:
        return ipc.call(ipc.sinful(str(local_dir / "run" / "master.sock")), "status", timeout=5)
    except HTCondorException:
        return None


def master_line(local_dir: Path) -> list[str]:
    try:
        pid = (local_dir / "run" / "master.pid").read_text().strip()
    except OSError:
        return []
    return [f"  {'master':<11} pid {pid}"]


def _daemon_line(name: str, info: dict) -> str:
    state = "running" if info["running"] else "down"
    return (f"  {name:<11} pid {info['pid']!s:<8} {state:<8} restarts {info['restarts']}"
            + _backing_off(info))


def _backing_off(info: dict) -> str:
    """What the master is doing about a daemon that does not stay up (HTCondor's back-off)."""
    if info["running"] or info.get("state") == "Hold":
        return "  (turned off)" if info.get("state") == "Hold" else ""
    why = info.get("cannot") or (f"exited with status {info['exit']}" if info.get("exit") is not None else "")
    failures = info.get("failures", 0)
    text = f"  {why}" if why else ""
    if info.get("restart_in") is not None:
        text += (f"; next start in {info['restart_in']:g} s"
                 f" (back-off after {failures} failure{'s' if failures != 1 else ''} in a row)")
    return text


@pool.command()
@local_dir_option
@click.option("--dask-scheduler", "dask_scheduler", metavar="ADDR", default=None,
              help="Also run jobs on the workers of the Dask scheduler at ADDR (tcp://host:8786).")
def start(pool, dask_scheduler):
    """Start a personal pool in LOCAL_DIR (returns once it is ready).

    A pool already running there is left alone: the command says so and exits 1."""
    from jobledger.daemons.master import pool_running_in
    from jobledger.daemons.client.personal import PersonalPool
    busy = pool_running_in(pool.local_dir)
    if busy:
        raise click.ClickException(busy)
    if dask_scheduler:
        from jobledger.daemons.dask_startd import scheduler_problem
        problem = scheduler_problem(dask_scheduler)
        if problem:
            raise click.ClickException(problem)
    try:
        config = {"DASK_SCHEDULER_ADDRESS": dask_scheduler} if dask_scheduler else None
        started = PersonalPool(local_dir=pool.local_dir, config=config).start().detach()
    except HTCondorException as exc:
        raise click.ClickException(str(exc)) from None
    config_file = started.config_file.absolute()
    click.echo(f"Pool started in {pool.local_dir}")
    for line in master_line(pool.local_dir):
        click.echo(line)
    for name, info in (daemons_of(pool.local_dir) or {}).items():
        click.echo(_daemon_line(name, info))
    click.echo("Point HTCondor's tools (condor_q, condor_submit, ...) at it with:\n"
               f"  export CONDOR_CONFIG={config_file}\n"
               f"Stop it with: jobledger pool stop --local-dir {pool.local_dir}")


@pool.command()
@local_dir_option
def stop(pool):
    """Stop the personal pool in LOCAL_DIR (waits until every daemon is gone)."""
    from jobledger.daemons.client.personal import PersonalPool
    try:
        running = PersonalPool.attach(pool.local_dir)
    except Exception:
        raise click.ClickException(f"no pool is running at {pool.local_dir}") from None
    names = list(daemons_of(pool.local_dir) or {})
    running.stop()
    click.echo(f"Pool in {pool.local_dir} stopped" + (f" ({', '.join(names)})" if names else "")
               + "; its journal stays there for jobledger history, replay and audit.")


@pool.command()
@local_dir_option
@json_option("The pool's state and daemons as one JSON object.")
def status(pool, as_json):
    """The daemons of the pool in LOCAL_DIR, their pids and restarts.

    Exit status 0 when the pool runs, 3 when it is stopped, 1 when there is none."""
    daemons = daemons_of(pool.local_dir) if pool.running() else None
    if daemons is None and not (pool.config.is_file() or pool.journal.is_file()):
        raise click.ClickException(f"no pool at {pool.local_dir} (found by {pool.how}); "
                                   f"start one with: jobledger pool start --local-dir {pool.local_dir}")
    state = "running" if daemons is not None else "stopped"
    if as_json:
        echo_json({"local_dir": str(pool.local_dir), "config": str(pool.config), "state": state,
                   "daemons": daemons or {}})
    else:
        click.echo(f"pool at {pool.local_dir}: {state}")
        for line in master_line(pool.local_dir) if daemons is not None else []:
            click.echo(line)
        for name, info in (daemons or {}).items():
            click.echo(_daemon_line(name, info))
        if daemons is None:
            click.echo(f"start it with: jobledger pool start --local-dir {pool.local_dir}")
    if daemons is None:
        click.get_current_context().exit(STOPPED_STATUS)
