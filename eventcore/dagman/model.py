"""What a DAG input file describes: nodes, their edges, scripts and settings.

Built by ``eventcore.dagman.parse``; read by the DAGMan process and by the
rescue writer.  Node names are case-sensitive; a spliced node's name is
``splice+node`` as in HTCondor.
"""

from __future__ import annotations

import re
from types import MappingProxyType
from typing import Mapping, NamedTuple, Sequence

import attrs

# Node kinds (HTCondor's node types).
JOB = "JOB"
FINAL = "FINAL"
PROVISIONER = "PROVISIONER"
SERVICE = "SERVICE"
SUBDAG = "SUBDAG"
SCRIPT_KINDS = ("PRE", "POST", "HOLD")
# One name="value" pair of a VARS line (a value may hold \" and \\).
# name = "value" | 'value' | value: HTCondor's DAG lexer (dag_parser.cpp) takes either quote, a
# backslash escaping within them, and a value without quotes up to the next blank
VAR_PAIR = re.compile(r'\s*+([+]?[A-Za-z_][A-Za-z0-9_.]*+)\s*+=\s*+(?:"([^"\\]*+(?:\\.[^"\\]*+)*+)"'
                      r"|'([^'\\]*+(?:\\.[^'\\]*+)*+)'|([^\s\"']++))")
UNESCAPE = re.compile(r"\\(.)")


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


class Node:
    """One node.  Lean, since a DAG may hold 10^5 of them: slots and no per-node
    containers until a command fills one (``scripts``, ``parents`` and ``children``
    start as shared empty ones and are replaced on first write), its place as
    source and line (``where`` is made when asked for), and its VARS kept as the
    text of the lines that set them, read into pairs when ``vars`` is asked for
    (each line was checked when parsed)."""

    __slots__ = ("name", "kind", "submit", "source", "line", "order", "directory", "noop", "done", "inline",
                 "retry", "retry_unless_exit", "scripts", "pre_skip", "vars_text", "priority",
                 "category", "abort_on", "save_point", "parents", "children")

    def __init__(self, name: str, kind: str, submit: str, source: str, line: int, directory: str = "",
                 order: int = 0) -> None:
        self.name = name
        self.kind = kind
        self.submit = submit               # submit file path, SUBMIT-DESCRIPTION name or DAG file
        self.source, self.line = source, line
        self.order = order                 # its place among the DAG's nodes, in the order made
        self.directory = directory
        self.noop = self.done = False
        self.inline = False                # submit names a SUBMIT-DESCRIPTION
        self.retry = 0
        self.retry_unless_exit: int | None = None
        self.scripts: Mapping[str, Script] = _NO_SCRIPTS    # kind -> Script
        self.pre_skip: int | None = None
        # The VARS lines that name it: the text of one plain line, or (text, pairs start, prepend)s.
        self.vars_text: str | list[tuple[str, int, bool]] | None = None
        self.priority = 0
        self.category: str | None = None
        self.abort_on: tuple | None = None                   # (exit value, return value or None)
        self.save_point: str | None = None
        self.parents: Sequence[str] = ()       # names, in the order first seen (a list once set)
        self.children: Sequence[str] = ()

    @property
    def where(self) -> Where:
        return Where(self.source, self.line)

    @property
    def vars(self) -> list[tuple[str, str, bool]]:
        """(name, value, prepend) in the order DAGMan applies them: a name set again by a
        later VARS line moves to the end with its new values."""
        if not self.vars_text:
            return []
        chunks = self.vars_text
        if isinstance(chunks, str):      # one VARS line without PREPEND/APPEND: the pairs follow the node
            words = chunks.split(None, 2)
            chunks = [(chunks, len(chunks) - len(words[2]), False)]
        table: dict[str, list] = {}
        for text, start, prepend in chunks:
            fresh: dict[str, list] = {}
            for match in VAR_PAIR.finditer(text, start):
                value = match.group(2)
                if value is None:
                    value = match.group(3)
                    if value is None:
                        value, quoted = match.group(4), False
                    else:
                        quoted = True
                else:
                    quoted = True
                pair = (match.group(1), UNESCAPE.sub(r"\1", value) if quoted and "\\" in value else value, prepend)
                fresh.setdefault(pair[0], []).append(pair)
            for name, named in fresh.items():
                table.pop(name, None)
                table[name] = named
        return [pair for pairs in table.values() for pair in pairs]

    @property
    def is_final(self) -> bool:
        return self.kind == FINAL

    @property
    def is_special(self) -> bool:
        """FINAL, PROVISIONER and SERVICE nodes stand outside the parent/child graph."""
        return self.kind in (FINAL, PROVISIONER, SERVICE)

    def __repr__(self) -> str:
        return f"Node({self.name!r}, {self.kind}, {self.submit!r}, {self.source}:{self.line})"


_NO_SCRIPTS: Mapping[str, Script] = MappingProxyType({})
@attrs.define
class Dag:
    """A whole DAG after INCLUDE and SPLICE are resolved."""
    source: str
    nodes: dict = attrs.field(factory=dict)            # name -> Node, in file order
    descriptions: dict = attrs.field(factory=dict)     # SUBMIT-DESCRIPTION name (or inline node) -> text
    named: set = attrs.field(factory=set)              # the SUBMIT-DESCRIPTION names: one namespace for
                                                       # the DAG and its splices, the first definition wins
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
    weak: set = attrs.field(factory=set)               # (parent, child) edges made by WEAK PARENT:
                                                       # the child waits for the parent to end, not
                                                       # to succeed (a PARENT line for it makes it strong)

    @property
    def final(self) -> Node | None:
        return next((n for n in self.nodes.values() if n.kind == FINAL), None)

    def of_kind(self, *kinds: str) -> list[Node]:
        return [n for n in self.nodes.values() if n.kind in kinds]
