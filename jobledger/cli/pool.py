"""``jobledger pool start|stop|status``: a personal pool that outlives the command.

The pool is found by ``--local-dir`` (default: the directory of
$CONDOR_CONFIG, else ~/.condor/personal).  Commands that talk to a pool
(q, rm, hold, release, history, submit) use the same option.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from jobledger.eventcore.errors import HTCondorException

DEFAULT_DIR = Path.home() / ".condor" / "personal"


def default_local_dir() -> str:
    config = os.environ.get("CONDOR_CONFIG")
    if config and Path(config).is_file():
        return str(Path(config).parent)
    return str(DEFAULT_DIR)


local_dir_option = click.option(
    "--local-dir", "local_dir", default=default_local_dir, show_default="$CONDOR_CONFIG's directory",
    type=click.Path(file_okay=False, path_type=str), help="The pool's LOCAL_DIR.")


def use_pool(local_dir: str) -> None:
    """Point this process at the pool in ``local_dir`` (its condor_config)."""
    from jobledger.daemons.config_files import reload_config
    config = Path(local_dir) / "condor_config"
    if not config.is_file():
        raise click.ClickException(f"no pool at {local_dir} (no condor_config there); "
                                   f"start one with: jobledger pool start --local-dir {local_dir}")
    os.environ["CONDOR_CONFIG"] = str(config)
    reload_config()


def schedd_of(local_dir: str):
    from jobledger.daemons.clients import Schedd
    use_pool(local_dir)
    try:
        return Schedd()
    except HTCondorException as exc:
        raise click.ClickException(f"the pool at {local_dir} is not running: {exc}") from None


@click.group()
def pool() -> None:
    """Start, stop or inspect a personal pool."""


@pool.command()
@local_dir_option
@click.option("--dask-scheduler", "dask_scheduler", metavar="ADDR", default=None,
              help="Also run jobs on the workers of the Dask scheduler at ADDR (tcp://host:8786).")
def start(local_dir, dask_scheduler):
    """Start a personal pool in LOCAL_DIR (returns once it is ready).

    A pool already running there is left alone: the command says so and exits 1."""
    from jobledger.daemons.master import pool_running_in
    from jobledger.daemons.personal import PersonalPool
    busy = pool_running_in(local_dir)
    if busy:
        raise click.ClickException(busy)
    if dask_scheduler:
        from jobledger.daemons.dask_startd import scheduler_problem
        problem = scheduler_problem(dask_scheduler)
        if problem:
            raise click.ClickException(problem)
    try:
        config = {"DASK_SCHEDULER_ADDRESS": dask_scheduler} if dask_scheduler else None
        started = PersonalPool(local_dir=Path(local_dir), config=config).start().detach()
    except HTCondorException as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(repr(started))


@pool.command()
@local_dir_option
def stop(local_dir):
    """Stop the personal pool in LOCAL_DIR (waits until every daemon is gone)."""
    from jobledger.daemons.personal import PersonalPool
    try:
        running = PersonalPool.attach(Path(local_dir))
    except Exception:
        raise click.ClickException(f"no pool is running at {local_dir}") from None
    running.stop()
    click.echo(repr(running))


@pool.command()
@local_dir_option
def status(local_dir):
    """The daemons of the pool in LOCAL_DIR, their pids and restarts."""
    from jobledger.daemons import ipc
    try:
        daemons = ipc.call(ipc.sinful(str(Path(local_dir) / "run" / "master.sock")), "status", timeout=5)
    except HTCondorException:
        raise click.ClickException(f"no pool is running at {local_dir}") from None
    click.echo(f"pool at {local_dir}: running")
    for name, info in daemons.items():
        state = "running" if info["running"] else "down"
        click.echo(f"  {name:<11} pid {info['pid']:<8} {state:<8} restarts {info['restarts']}"
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
