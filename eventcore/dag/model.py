"""What a DAG input file describes: nodes, their edges, scripts and settings.

Built by ``eventcore.dag.parse``; read by the DAGMan process and by the
rescue writer.  Node names are case-sensitive; a spliced node's name is
``splice+node`` as in HTCondor.
"""

from __future__ import annotations

from typing import NamedTuple

import attrs

# Node kinds (HTCondor's node types).
JOB = "JOB"
FINAL = "FINAL"
PROVISIONER = "PROVISIONER"
SERVICE = "SERVICE"
SUBDAG = "SUBDAG"
SCRIPT_KINDS = ("PRE", "POST", "HOLD")


class Where(NamedTuple):
    """The file and line a command came from (a tuple: one is made per line, cheaply)."""
    source: str
    line: int

    def __str__(self) -> str:
        return f"{self.source}:{self.line}"


@attrs.frozen
class Script:
    """SCRIPT [DEFER status time] [DEBUG file type] PRE|POST|HOLD node exe args."""
    kind: str
    executable: str
    arguments: tuple[str, ...] = ()
    defer_status: int | None = None
    defer_time: int = 0
    debug_file: str | None = None
    debug_type: str | None = None      # STDOUT, STDERR or ALL


@attrs.define
class Node:
    name: str
    kind: str
    submit: str                        # submit file path, SUBMIT-DESCRIPTION name or DAG file
    where: Where
    directory: str = ""
    noop: bool = False
    done: bool = False
    inline: bool = False               # submit names a SUBMIT-DESCRIPTION
    retry: int = 0
    retry_unless_exit: int | None = None
    scripts: dict = attrs.field(factory=dict)          # kind -> Script
    pre_skip: int | None = None
    vars: list = attrs.field(factory=list)             # (name, value, prepend)
    priority: int = 0
    category: str | None = None
    abort_on: tuple | None = None                       # (exit value, return value or None)
    save_point: str | None = None
    parents: list = attrs.field(factory=list)          # names, in the order first seen
    children: list = attrs.field(factory=list)

    @property
    def is_final(self) -> bool:
        return self.kind == FINAL

    @property
    def is_special(self) -> bool:
        """FINAL, PROVISIONER and SERVICE nodes stand outside the parent/child graph."""
        return self.kind in (FINAL, PROVISIONER, SERVICE)


@attrs.define
class Dag:
    """A whole DAG after INCLUDE and SPLICE are resolved."""
    source: str
    nodes: dict = attrs.field(factory=dict)            # name -> Node, in file order
    descriptions: dict = attrs.field(factory=dict)     # SUBMIT-DESCRIPTION name -> text
    max_jobs: dict = attrs.field(factory=dict)         # category -> limit
    config: str | None = None
    set_job_attrs: dict = attrs.field(factory=dict)    # attribute -> expression text
    env_get: list = attrs.field(factory=list)
    env_set: list = attrs.field(factory=list)          # (key, value)
    dot: dict | None = None                            # file, update, overwrite, include
    node_status_file: dict | None = None               # file, min_update, always_update
    jobstate_log: str | None = None
    reject: Where | None = None
    rescue_retries: dict = attrs.field(factory=dict)   # node -> retries left (a rescue DAG)

    @property
    def final(self) -> Node | None:
        return next((n for n in self.nodes.values() if n.kind == FINAL), None)

    def of_kind(self, *kinds: str) -> list[Node]:
        return [n for n in self.nodes.values() if n.kind in kinds]
