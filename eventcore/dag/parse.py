"""DAG input files -> a ``Dag``, as condor_dagman reads them.

Two passes over each file, as DAGMan does: first the commands that make
nodes (JOB/NODE, FINAL, PROVISIONER, SERVICE, SUBDAG EXTERNAL, SPLICE,
SUBMIT-DESCRIPTION), then every other command in file order, so a command
may name a node defined further down.  When several commands set one
property of a node, the last one wins (``ALL_NODES`` included; it never
touches the FINAL node).  A splice's nodes are named ``splice+node``; in
PARENT/CHILD a splice name stands for its initial nodes (as a child) or its
terminal nodes (as a parent).  ``CONNECT out in`` joins two splices of
a scope by their pins: every node on PIN_OUT n of ``out`` becomes a parent
of every node on PIN_IN n of ``in`` (pins are numbered 1.. without gaps,
the counts must match, and no node of ``in`` may be left without a
parent); pins no CONNECT names are ignored.  Every error is a ``DagError`` naming
file:line, raised before anything runs.  Reading files is the caller's:
``read(path) -> bytes``.
"""

from __future__ import annotations

import gc
import posixpath
from contextlib import contextmanager

from jobledger.eventcore.errors import DagError

from . import commands
from .graph import check_acyclic
from .lines import MAX_DEPTH, Line, Reader, logical_lines
from .model import FINAL, JOB, PROVISIONER, SERVICE, SUBDAG, Dag, Node, Where

NODE_COMMANDS = {"JOB": JOB, "NODE": JOB, "FINAL": FINAL, "PROVISIONER": PROVISIONER,
                 "SERVICE": SERVICE}
_OPTIONS = {JOB: frozenset({"DIR", "NOOP", "DONE"}), FINAL: frozenset({"DIR", "NOOP"})}


class Scope:
    """One DAG file's namespace: the top DAG or a splice (``prefix`` = ``name+``)."""

    def __init__(self, dag: Dag, prefix: str, directory: str, source: str):
        self.dag = dag
        self.prefix = prefix
        self.directory = directory
        self.source = source
        self.names: dict[str, Node] = {}      # full name -> node, this scope's own, in order
        self.everyone: list[str] = []         # and those of nested splices too, in file order
        self.splices: dict[str, tuple[list[str], list[str]]] = {}   # name -> (initial, terminal)
        self.inner: dict[str, Scope] = {}     # splice name -> its scope (for CONNECT)
        self.pins: dict[str, dict[int, list[str]]] = {"PIN_IN": {}, "PIN_OUT": {}}   # number -> nodes
        self.edges: dict = {}                 # (parent, child) -> its Line, for the whole DAG
        self.variables: dict = {}             # node -> VARS name -> its pairs, for the whole DAG

    def node(self, name: str, where: Where | Line) -> Node:
        node = self.names.get(self.prefix + name)
        if node is None:
            raise DagError(f"unknown node {name!r}", where.source, where.line)
        return node

    def targets(self, name: str, where: Where | Line) -> list[Node]:
        """The nodes a node-name argument names: one node, or every non-FINAL node."""
        if len(name) == 9 and name.upper() == "ALL_NODES":
            return [n for n in self.names.values() if not n.is_final]
        return [self.node(name, where)]

    def members(self) -> list[str]:
        """Every node of this scope, those of nested splices included."""
        return self.everyone

    def path(self, name: str) -> str:
        return name if not self.directory or posixpath.isabs(name) else posixpath.join(self.directory, name)


@contextmanager
def _no_cyclic_gc():
    """The cyclic collector paused: a parse allocates several objects per line and keeps
    them all, so each of the collector's passes walks a heap that only grows (a third of
    the time at 10^5 nodes) and finds nothing; the parse makes no cycles to collect."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def parse_dag(path: str, read: Reader, rescue: str | None = None) -> Dag:
    """The DAG in ``path`` (and, for a partial rescue DAG, the DONE/RETRY lines of ``rescue``)."""
    with _no_cyclic_gc():
        return _parse_dag(path, read, rescue)


def _parse_dag(path: str, read: Reader, rescue: str | None) -> Dag:
    dag = Dag(source=path)
    scope = Scope(dag, "", "", path)
    edges = _parse_scope(scope, logical_lines(read, path), read, 0)
    if rescue is not None:
        for line in logical_lines(read, rescue):
            if line.words[0].upper() not in ("DONE", "RETRY"):
                raise DagError(f"a rescue DAG holds only DONE and RETRY lines, not {line.words[0]!r}",
                               line.where.source, line.where.line)
            commands.apply(scope, line)
    for name, table in scope.variables.items():   # node.vars: (name, value, prepend), last set last
        dag.nodes[name].vars = [pair for pairs in table.values() for pair in pairs]
    check_acyclic(dag, edges)
    return dag


def _parse_scope(scope: Scope, lines: list[Line], read: Reader, depth: int) -> dict:
    rest = []
    for line in lines:
        keyword = line.words[0].upper()
        if keyword in NODE_COMMANDS:
            _add_node(scope, line, NODE_COMMANDS[keyword])
        elif keyword == "SUBDAG":
            _add_subdag(scope, line)
        elif keyword == "SPLICE":
            _add_splice(scope, line, read, depth)
        elif keyword == "SUBMIT-DESCRIPTION":
            _add_description(scope, line)
        else:
            rest.append((keyword, line))
    for node in scope.names.values():
        if not node.inline and node.kind != SUBDAG and scope.prefix + node.submit in scope.dag.descriptions:
            node.inline, node.submit = True, scope.prefix + node.submit
    for keyword, line in rest:
        commands.apply(scope, line, keyword)
    return scope.edges


def _add_node(scope: Scope, line: Line, kind: str) -> None:
    words, where = line.words, line.where
    if line.body is not None:
        if len(words) < 2:
            raise DagError(f"{words[0]} needs a node name", where.source, where.line)
        name = words[1]
        scope.dag.descriptions[scope.prefix + name] = line.body
        submit, options = scope.prefix + name, words[2:]
    else:
        if len(words) < 3:
            raise DagError(f"{words[0]} needs a node name and a submit description",
                           where.source, where.line)
        name, submit, options = words[1], words[2], words[3:]
    directory, flags = _node_options(options, _OPTIONS.get(kind, frozenset()), where)
    node = _new_node(scope, name, kind, submit, where)
    node.inline = line.body is not None
    _apply_options(scope, node, directory, flags)
    if kind == FINAL and sum(n.is_final for n in scope.dag.nodes.values()) > 1:
        raise DagError("a DAG may have only one FINAL node", where.source, where.line)
    if kind == PROVISIONER and len(scope.dag.of_kind(PROVISIONER)) > 1:
        raise DagError("a DAG may have only one PROVISIONER node", where.source, where.line)


def _add_subdag(scope: Scope, line: Line) -> None:
    words, where = line.words, line.where
    if len(words) < 4 or words[1].upper() != "EXTERNAL":
        raise DagError("expected SUBDAG EXTERNAL name dagfile [DIR dir] [NOOP] [DONE]",
                       where.source, where.line)
    directory, flags = _node_options(words[4:], _OPTIONS[JOB], where)
    node = _new_node(scope, words[2], SUBDAG, words[3], where)
    _apply_options(scope, node, directory, flags)


def _add_description(scope: Scope, line: Line) -> None:
    words, where = line.words, line.where
    if line.body is None or len(words) != 2:
        raise DagError("expected SUBMIT-DESCRIPTION name { ... }", where.source, where.line)
    scope.dag.descriptions[scope.prefix + words[1]] = line.body


def _node_options(options, allowed: frozenset, where: Where) -> tuple[str, set]:
    if not options:
        return "", set()
    directory, flags, index = "", set(), 0
    while index < len(options):
        word = options[index].upper()
        if word not in allowed:
            raise DagError(f"unexpected {options[index]!r}", where.source, where.line)
        if word == "DIR":
            if index + 1 >= len(options):
                raise DagError("DIR needs a directory", where.source, where.line)
            directory = options[index + 1]
            index += 2
            continue
        flags.add(word)
        index += 1
    return directory, flags


def _new_node(scope: Scope, name: str, kind: str, submit: str, where: Where) -> Node:
    bad = name.upper() in ("ALL_NODES", "PARENT", "CHILD") or "+" in name
    if bad:
        raise DagError(f"{name!r} is not a valid node name", where.source, where.line)
    full = scope.prefix + name
    if full in scope.dag.nodes or name in scope.splices:
        first = scope.dag.nodes[full].where if full in scope.dag.nodes else where
        raise DagError(f"node {name!r} is defined twice (first at {first})", where.source, where.line)
    node = Node(name=full, kind=kind, submit=submit, where=where)
    scope.dag.nodes[full] = node
    scope.names[full] = node
    scope.everyone.append(full)
    return node


def _apply_options(scope: Scope, node: Node, directory: str, flags: set) -> None:
    node.directory = scope.path(directory) if directory else scope.directory
    node.noop = "NOOP" in flags
    node.done = "DONE" in flags


def _add_splice(scope: Scope, line: Line, read: Reader, depth: int) -> None:
    words, where = line.words, line.where
    if len(words) < 3:
        raise DagError("expected SPLICE name dagfile [DIR dir]", where.source, where.line)
    name = words[1]
    directory, _ = _node_options(words[3:], frozenset({"DIR"}), where)
    if depth >= MAX_DEPTH:
        raise DagError(f"splices nested deeper than {MAX_DEPTH}", where.source, where.line)
    if "+" in name or name in scope.splices or scope.prefix + name in scope.dag.nodes:
        raise DagError(f"{name!r} is not a valid splice name or is used twice", where.source, where.line)
    inner_dir = scope.path(directory) if directory else scope.directory
    inner = Scope(scope.dag, f"{scope.prefix}{name}+", inner_dir, words[2])
    inner.edges, inner.variables = scope.edges, scope.variables
    lines = logical_lines(read, words[2], where, depth + 1, inner_dir)
    _parse_scope(inner, lines, read, depth + 1)
    for full in inner.names:
        if scope.dag.nodes[full].is_special:
            raise DagError(f"a spliced DAG may not have a {scope.dag.nodes[full].kind} node "
                           f"({scope.dag.nodes[full].where})", where.source, where.line)
    members = inner.members()
    initial = [n for n in members if not scope.dag.nodes[n].parents]
    terminal = [n for n in members if not scope.dag.nodes[n].children]
    scope.splices[name] = (initial, terminal)
    scope.inner[name] = inner
    scope.everyone += members
