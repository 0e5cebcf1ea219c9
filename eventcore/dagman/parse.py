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

import posixpath

from jobledger.eventcore.errors import DagError

from . import commands
from .nogc import no_cyclic_gc
from .graph import check_acyclic
from .lines import MAX_DEPTH, Command, FirstPass, Line, Reader, scan
from .model import FINAL, JOB, PROVISIONER, SERVICE, SUBDAG, Dag, Node, Where

NODE_COMMANDS = {"JOB": JOB, "NODE": JOB, "FINAL": FINAL, "PROVISIONER": PROVISIONER,
                 "SERVICE": SERVICE}
_RESERVED = ("ALL_NODES", "PARENT", "CHILD")
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
        self.edges: dict = {}                 # (parent, child) -> its line, for the whole DAG
        self.backward = False                 # an edge to a node made before its parent (a cycle may be)

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


def parse_dag(path: str, read: Reader, rescue: str | None = None) -> Dag:
    """The DAG in ``path`` (and, for a partial rescue DAG, the DONE/RETRY lines of ``rescue``)."""
    with no_cyclic_gc():
        return _parse_dag(path, read, rescue)


def _parse_dag(path: str, read: Reader, rescue: str | None) -> Dag:
    dag = Dag(source=path)
    scope = Scope(dag, "", "", path)
    _parse_scope(scope, path, read, None, 0)
    if rescue is not None:
        _apply_rescue(scope, rescue, read)
    if scope.backward:            # else every edge runs from a node to one made after it
        check_acyclic(dag, scope.edges)
    return dag


def _apply_rescue(scope: Scope, rescue: str, read: Reader) -> None:
    def refuse(keyword: str, line: Line) -> None:
        raise DagError(f"a rescue DAG holds only DONE and RETRY lines, not {line.words[0]!r}",
                       line.source, line.line)
    rest: list[Command] = []
    scan(read, rescue, refuse, rest)
    for text, source, number, words in rest:
        line = Line(tuple(words or text.split()), text, source, number)
        keyword = line.words[0].upper()
        if keyword not in ("DONE", "RETRY"):
            refuse(keyword, line)
        commands.apply(scope, line, keyword)


def _parse_scope(scope: Scope, path: str, read: Reader, where: Where | None, depth: int) -> None:
    """Both of DAGMan's passes over one DAG file: its nodes first, then every other command."""
    rest: list[Command] = []
    scan(read, path, _first_pass(scope, read, depth), rest, commands.usual(scope), where, depth,
         scope.directory)
    if scope.dag.descriptions:
        for node in scope.names.values():
            if not node.inline and node.kind != SUBDAG and node.submit in scope.dag.named:
                node.inline = True
    commands.second_pass(scope, rest)


def _first_pass(scope: Scope, read: Reader, depth: int) -> FirstPass:
    """What takes each first-pass line of the scope; a plain ``JOB name submit`` line, most
    of a big DAG, makes its node right there."""
    nodes, names, everyone, prefix, directory = scope.dag.nodes, scope.names, scope.everyone, \
        scope.prefix, scope.directory

    def first(keyword: str, line: Line) -> None:
        words = line.words
        if keyword == "JOB" and len(words) == 3 and line.body is None:
            name = words[1]
            full = prefix + name
            if ("+" not in name and full not in nodes and name not in scope.splices
                    and not (len(name) in (5, 6, 9) and name.upper() in _RESERVED)):
                nodes[full] = names[full] = Node(full, JOB, words[2], line.source, line.line, directory,
                                                 len(nodes))
                everyone.append(full)
                return
        kind = NODE_COMMANDS.get(keyword)
        if kind is not None:
            _add_node(scope, line, kind)
        elif keyword == "SUBDAG":
            _add_subdag(scope, line)
        elif keyword == "SPLICE":
            _add_splice(scope, line, read, depth)
        else:
            _add_description(scope, line)
    return first


def _add_node(scope: Scope, line: Line, kind: str) -> None:
    words, where = line.words, line       # a Line has its place's source and line
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
    node = _new_node(scope, name, kind, submit, where)
    node.inline = line.body is not None
    if options:
        directory, flags = _node_options(options, _OPTIONS.get(kind, frozenset()), where)
        _apply_options(scope, node, directory, flags)
    else:
        node.directory = scope.directory
    if kind == FINAL and sum(n.kind == FINAL for n in scope.dag.nodes.values()) > 1:
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
    # HTCondor's DAGMan keeps one table of descriptions for the DAG and its splices, and a
    # name given again is warned of and ignored (the upstream tests of inline descriptions)
    if words[1] not in scope.dag.named:
        scope.dag.named.add(words[1])
        scope.dag.descriptions[words[1]] = line.body


def _node_options(options, allowed: frozenset, where: Where | Line) -> tuple[str, set]:
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


def _new_node(scope: Scope, name: str, kind: str, submit: str, where: Where | Line) -> Node:
    bad = len(name) in (5, 6, 9) and name.upper() in _RESERVED
    if bad or "+" in name:
        raise DagError(f"{name!r} is not a valid node name", where.source, where.line)
    full = scope.prefix + name
    if full in scope.dag.nodes or name in scope.splices:
        first = scope.dag.nodes[full].where if full in scope.dag.nodes else Where(where.source, where.line)
        raise DagError(f"node {name!r} is defined twice (first at {first})", where.source, where.line)
    node = Node(full, kind, submit, where.source, where.line, scope.directory, len(scope.dag.nodes))
    _put(scope, full, node)
    return node


def _put(scope: Scope, full: str, node: Node) -> None:
    scope.dag.nodes[full] = node
    scope.names[full] = node
    scope.everyone.append(full)


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
    inner.edges = scope.edges
    _parse_scope(inner, words[2], read, where, depth + 1)
    scope.backward = scope.backward or inner.backward
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
