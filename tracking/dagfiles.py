"""Reading what DAGMan leaves in a DAG directory: the newest rescue file
(applied to a DAG) and the node status file."""

from __future__ import annotations

import os
from pathlib import Path

from jobledger.eventcore.dags.formatter import SimpleFormatter
from jobledger.eventcore.dags.nodestatus import DAGStatusReport, parse_node_status
from jobledger.eventcore.dags.render import DEFAULT_DAG_FILE_NAME
from jobledger.eventcore.dags.rescue import latest_rescue_name, rescue_text
from jobledger.eventcore.errors import DAGFileError, NoRescueFileFound


def _read_text(path) -> str:
    try:
        return Path(path).read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        raise DAGFileError(f"not UTF-8 text (byte {error.start})", os.fspath(path)) from None


def rescue(dag, rescue_file, formatter=None) -> None:
    """Mark ``dag``'s nodes done as the rescue file says (replacing every node's ``done``)."""
    rescue_text(dag, _read_text(rescue_file), formatter or SimpleFormatter(), os.fspath(rescue_file))


def find_rescue_file(dag_dir, dag_file_name: str = DEFAULT_DAG_FILE_NAME) -> Path:
    """The rescue file DAGMan would use: the highest ``<dag_file_name>.rescueNNN`` in ``dag_dir``."""
    dag_dir = Path(dag_dir)
    try:
        names = os.listdir(dag_dir)
    except FileNotFoundError:
        names = []
    name = latest_rescue_name(names, dag_file_name)
    if name is None:
        raise NoRescueFileFound(f"no rescue file for DAG {dag_file_name} in {dag_dir}")
    return dag_dir / name


def read_node_status(path) -> DAGStatusReport:
    """The node status file DAGMan writes (``NODE_STATUS_FILE``), parsed."""
    return parse_node_status(_read_text(path), os.fspath(path))
