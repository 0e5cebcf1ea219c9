"""Logical nodes of a DAG: layers of JOB nodes, sub-DAGs, the FINAL node,
their scripts and abort conditions, and ``Nodes``, a set of them.

A node belongs to one DAG and is made by it (``DAG.layer``, ``node.child_layer``
...); two nodes are equal when they are the same DAG's node of that name.
"""

from __future__ import annotations

import functools
import itertools
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import PurePath

from jobledger.eventcore.errors import InvalidDAG
from jobledger.eventcore.submit.description import Submit

from .walk_order import WalkOrder

_BAD_NAME_CHARS = frozenset(' \t\r\n\v\f"/\x00')


def check_node_name(name, what: str = "node name") -> str:
    """``name`` if DAGMan can use it as a node name (and a file name stem)."""
    if not isinstance(name, str) or not name:
        raise InvalidDAG(f"a {what} must be a non-empty string, not {name!r}")
    bad = sorted(set(name) & _BAD_NAME_CHARS)
    if bad:
        raise InvalidDAG(f"{what} {name!r} contains {''.join(bad)!r} (no whitespace, quotes or '/')")
    return name


def _per_index(flag, count: int) -> dict[int, bool]:
    """A ``noop``/``done`` argument as {index: bool}; True means every one of
    the ``count`` underlying nodes, False none."""
    if isinstance(flag, bool):
        return dict.fromkeys(range(count), True) if flag else {}
    if not isinstance(flag, Mapping):
        raise TypeError(f"noop/done must be a bool or a mapping of node index to bool, not {flag!r}")
    return dict(flag)


class Script:
    """A PRE or POST script: ``SCRIPT [DEFER status delay] PRE|POST node executable args``."""

    def __init__(self, executable, arguments: Iterable | None = None, retry: bool = False,
                 retry_status: int = 1, retry_delay: int = 0):
        self.executable = executable
        self.arguments = [str(arg) for arg in (arguments or [])]
        self.retry = retry
        self.retry_status = retry_status
        self.retry_delay = retry_delay

    def __repr__(self) -> str:
        return (f"Script(executable={self.executable!r}, arguments={self.arguments!r}, retry={self.retry}, "
                f"retry_status={self.retry_status}, retry_delay={self.retry_delay})")


class DAGAbortCondition:
    """``ABORT-DAG-ON node node_exit_value [RETURN dag_return_value]``."""

    def __init__(self, node_exit_value: int, dag_return_value: int | None = None):
        self.node_exit_value = node_exit_value
        self.dag_return_value = dag_return_value

    def __repr__(self) -> str:
        return (f"DAGAbortCondition(node_exit_value={self.node_exit_value}, "
                f"dag_return_value={self.dag_return_value})")


@functools.total_ordering
class BaseNode:
    """What every logical node has: a name, its DAG, per-node settings, edges."""

    def __init__(self, dag, *, name: str, dir=None, noop=False, done=False, retries: int | None = None,
                 retry_unless_exit: int | None = None, pre: Script | None = None, post: Script | None = None,
                 pre_skip_exit_code: int | None = None, priority: int = 0, category: str | None = None,
                 abort: DAGAbortCondition | None = None):
        self._dag = dag
        self.name = check_node_name(name)
        self.dir = PurePath(dir) if dir is not None else None
        self.noop = _per_index(noop, len(self))
        self.done = _per_index(done, len(self))
        self.retries = retries
        self.retry_unless_exit = retry_unless_exit
        self.pre = pre
        self.post = post
        self.pre_skip_exit_code = pre_skip_exit_code
        self.priority = priority
        self.category = category
        self.abort = abort

    def __len__(self) -> int:
        return 1

    def __iter__(self) -> Iterator["BaseNode"]:
        yield self

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name = {self.name})"

    def __hash__(self) -> int:
        return hash((type(self), self.name))

    def __eq__(self, other) -> bool:
        if not isinstance(other, type(self)):
            return NotImplemented
        return self._dag is other._dag and self.name == other.name

    def __lt__(self, other) -> bool:
        if not isinstance(other, BaseNode):
            return NotImplemented
        return self.name < other.name

    # -- making related nodes -------------------------------------------------
    def child_layer(self, edge=None, **kwargs) -> "NodeLayer":
        """A new layer, child of this node through ``edge`` (ManyToMany by default)."""
        node = self._dag.layer(**kwargs)
        self._dag._edges.add(self, node, edge)
        return node

    def parent_layer(self, edge=None, **kwargs) -> "NodeLayer":
        """A new layer, parent of this node."""
        node = self._dag.layer(**kwargs)
        self._dag._edges.add(node, self, edge)
        return node

    def child_subdag(self, edge=None, **kwargs) -> "SubDAG":
        """A new sub-DAG, child of this node."""
        node = self._dag.subdag(**kwargs)
        self._dag._edges.add(self, node, edge)
        return node

    def parent_subdag(self, edge=None, **kwargs) -> "SubDAG":
        """A new sub-DAG, parent of this node."""
        node = self._dag.subdag(**kwargs)
        self._dag._edges.add(node, self, edge)
        return node

    # -- edges to existing nodes ----------------------------------------------
    def add_children(self, *nodes, edge=None) -> "BaseNode":
        for node in _flatten(nodes):
            self._dag._edges.add(self, node, edge)
        return self

    def remove_children(self, *nodes) -> "BaseNode":
        for node in _flatten(nodes):
            self._dag._edges.remove(self, node)
        return self

    def add_parents(self, *nodes, edge=None) -> "BaseNode":
        for node in _flatten(nodes):
            self._dag._edges.add(node, self, edge)
        return self

    def remove_parents(self, *nodes) -> "BaseNode":
        for node in _flatten(nodes):
            self._dag._edges.remove(node, self)
        return self

    @property
    def children(self) -> "Nodes":
        return Nodes(self._dag._edges.children(self))

    @property
    def parents(self) -> "Nodes":
        return Nodes(self._dag._edges.parents(self))

    def walk_ancestors(self, order: WalkOrder = WalkOrder.DEPTH_FIRST) -> Iterator["BaseNode"]:
        return self._dag.walk_ancestors(self, order)

    def walk_descendants(self, order: WalkOrder = WalkOrder.DEPTH_FIRST) -> Iterator["BaseNode"]:
        return self._dag.walk_descendants(self, order)


def _submit_description(value):
    """A layer's description: a Submit, or the path of a submit file."""
    if value is None:
        return Submit({})
    if isinstance(value, Submit) or isinstance(value, (str, os.PathLike)):
        return value
    raise TypeError(f"submit_description must be a Submit or the path of a submit file, not {value!r}")


class NodeLayer(BaseNode):
    """Nodes that share a submit description and edges: one node per ``vars`` dict."""

    def __init__(self, dag, *, submit_description=None, vars: Iterable[Mapping] | None = None, **kwargs):
        self.vars = [{}] if vars is None else list(vars)
        super().__init__(dag, **kwargs)
        self.submit_description = _submit_description(submit_description)

    def __len__(self) -> int:
        """How many DAGMan nodes the layer stands for."""
        return len(self.vars)


class SubDAG(BaseNode):
    """``SUBDAG EXTERNAL name dag_file``: another DAG run as one node."""

    def __init__(self, dag, *, dag_file, **kwargs):
        super().__init__(dag, **kwargs)
        self.dag_file = dag_file


class FinalNode(BaseNode):
    """The FINAL node: runs last, whatever happened to the others."""

    def __init__(self, dag, submit_description=None, **kwargs):
        super().__init__(dag, **kwargs)
        self.submit_description = _submit_description(submit_description)


def _flatten(groups) -> Iterator[BaseNode]:
    """Nodes out of arguments that are nodes, Nodes, or iterables of nodes."""
    return itertools.chain.from_iterable(groups)


class Nodes:
    """A set of logical nodes (of one DAG, keyed by name) that can be
    connected and walked as one."""

    def __init__(self, *nodes):
        self._by_name: dict[str, BaseNode] = {}
        for node in _flatten(nodes):
            if not isinstance(node, BaseNode):
                raise TypeError(f"Nodes holds DAG nodes, not {node!r}")
            self._by_name[node.name] = node

    def __eq__(self, other) -> bool:
        if not isinstance(other, Nodes):
            return NotImplemented
        return self._by_name == other._by_name

    __hash__ = None

    def __len__(self) -> int:
        return len(self._by_name)

    def __iter__(self) -> Iterator[BaseNode]:
        return iter(list(self._by_name.values()))

    def __contains__(self, node) -> bool:
        if isinstance(node, str):
            return node in self._by_name
        return isinstance(node, BaseNode) and self._by_name.get(node.name) == node

    def __repr__(self) -> str:
        return f"Nodes({', '.join(repr(n) for n in sorted(self._by_name.values(), key=lambda n: n.name))})"

    __str__ = __repr__

    def _some_element(self) -> BaseNode:
        if not self._by_name:
            raise InvalidDAG("an empty Nodes has no DAG to add a node to")
        return next(iter(self._by_name.values()))

    def child_layer(self, type=None, **kwargs) -> NodeLayer:
        """A new layer, child of every node here through edge ``type``."""
        node = self._some_element()._dag.layer(**kwargs)
        node.add_parents(self, edge=type)
        return node

    def parent_layer(self, type=None, **kwargs) -> NodeLayer:
        node = self._some_element()._dag.layer(**kwargs)
        node.add_children(self, edge=type)
        return node

    def child_subdag(self, type=None, **kwargs) -> SubDAG:
        node = self._some_element()._dag.subdag(**kwargs)
        node.add_parents(self, edge=type)
        return node

    def parent_subdag(self, type=None, **kwargs) -> SubDAG:
        node = self._some_element()._dag.subdag(**kwargs)
        node.add_children(self, edge=type)
        return node

    def add_children(self, *nodes, type=None) -> "Nodes":
        for node in self:
            node.add_children(*nodes, edge=type)
        return self

    def remove_children(self, *nodes) -> "Nodes":
        for node in self:
            node.remove_children(*nodes)
        return self

    def add_parents(self, *nodes, type=None) -> "Nodes":
        for node in self:
            node.add_parents(*nodes, edge=type)
        return self

    def remove_parents(self, *nodes) -> "Nodes":
        for node in self:
            node.remove_parents(*nodes)
        return self

    def walk_ancestors(self, order: WalkOrder = WalkOrder.DEPTH_FIRST) -> Iterator[BaseNode]:
        return itertools.chain.from_iterable(node.walk_ancestors(order) for node in self)

    def walk_descendants(self, order: WalkOrder = WalkOrder.DEPTH_FIRST) -> Iterator[BaseNode]:
        return itertools.chain.from_iterable(node.walk_descendants(order) for node in self)
