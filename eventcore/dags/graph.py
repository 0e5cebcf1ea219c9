"""``DAG``: the logical nodes, the edges between them, and the DAG-wide
settings (DAGMan configuration, category throttles, DOT, node status file,
job state log)."""

from __future__ import annotations

import collections
import fnmatch
from collections.abc import Callable, Iterator, Mapping
from pathlib import PurePath

from jobledger.eventcore.errors import DuplicateNodeName, InvalidDAG

from . import nodes as _nodes
from .edges import BaseEdge, ManyToMany
from .walk_order import WalkOrder, walk_order


class DotConfig:
    """``DOT path [UPDATE|DONT-UPDATE] [OVERWRITE|DONT-OVERWRITE] [INCLUDE file]``."""

    def __init__(self, path, update: bool = False, overwrite: bool = True, include_file=None):
        self.path = PurePath(path)
        self.update = update
        self.overwrite = overwrite
        self.include_file = PurePath(include_file) if include_file is not None else None

    def __repr__(self) -> str:
        return (f"DotConfig(path = {self.path}, update = {self.update}, overwrite = {self.overwrite}, "
                f"include_file = {self.include_file})")


class NodeStatusFile:
    """``NODE_STATUS_FILE path [update_time] [ALWAYS-UPDATE]``."""

    def __init__(self, path, update_time: int | None = None, always_update: bool = False):
        self.path = PurePath(path)
        self.update_time = update_time
        self.always_update = always_update

    def __repr__(self) -> str:
        return (f"NodeStatusFile(path = {self.path}, update_time = {self.update_time}, "
                f"always_update = {self.always_update})")


class EdgeStore:
    """Edges of one DAG: (parent, child) -> edge kind, with both directions
    indexed in insertion order."""

    def __init__(self, dag: "DAG"):
        self._dag = dag
        self._edges: dict[tuple, BaseEdge] = {}
        self._children: dict = collections.defaultdict(dict)
        self._parents: dict = collections.defaultdict(dict)

    def add(self, parent, child, edge: BaseEdge | None = None) -> None:
        for node in (parent, child):
            if isinstance(node, _nodes.FinalNode):
                raise InvalidDAG(f"the FINAL node {node.name!r} runs after all others and has no edges")
            if node not in self._dag:
                raise InvalidDAG(f"{node!r} is not a node of this DAG")
        if edge is None:
            edge = ManyToMany()
        elif not isinstance(edge, BaseEdge):
            raise TypeError(f"an edge must be a BaseEdge (ManyToMany, OneToOne, ...), not {edge!r}")
        self._edges[(parent, child)] = edge
        self._children[parent][child] = None
        self._parents[child][parent] = None

    def remove(self, parent, child) -> BaseEdge | None:
        self._children[parent].pop(child, None)
        self._parents[child].pop(parent, None)
        return self._edges.pop((parent, child), None)

    def get(self, parent, child) -> BaseEdge | None:
        return self._edges.get((parent, child))

    def children(self, node) -> list:
        return list(self._children.get(node, ()))

    def parents(self, node) -> list:
        return list(self._parents.get(node, ()))

    def __iter__(self) -> Iterator[tuple]:
        return iter(list(self._edges))

    def __contains__(self, pair) -> bool:
        return pair in self._edges

    def __len__(self) -> int:
        return len(self._edges)

    def items(self) -> Iterator[tuple[tuple, BaseEdge]]:
        return iter(list(self._edges.items()))


class DAG:
    """A DAGMan workflow: logical nodes (layers, sub-DAGs), edges, settings."""

    def __init__(self, dagman_config: Mapping | None = None, dagman_job_attributes: Mapping | None = None,
                 max_jobs_by_category: Mapping[str, int] | None = None, dot_config: DotConfig | None = None,
                 jobstate_log=None, node_status_file: NodeStatusFile | None = None):
        self._nodes: dict[str, _nodes.BaseNode] = {}
        self._edges = EdgeStore(self)
        self._final_node: _nodes.FinalNode | None = None
        self.jobstate_log = PurePath(jobstate_log) if jobstate_log is not None else None
        self.max_jobs_per_category = dict(max_jobs_by_category or {})
        self.dagman_config = dict(dagman_config or {})
        self.dagman_job_attrs = dict(dagman_job_attributes or {})
        self.dot_config = dot_config
        self.node_status_file = node_status_file

    def __repr__(self) -> str:
        final = f", final={self._final_node.name!r}" if self._final_node is not None else ""
        return f"DAG({len(self._nodes)} nodes, {len(self._edges)} edges{final})"

    def __contains__(self, node) -> bool:
        if isinstance(node, str):
            return node in self._nodes
        return isinstance(node, _nodes.BaseNode) and self._nodes.get(node.name) == node

    # -- making nodes -----------------------------------------------------------
    def _check_new_name(self, name) -> None:
        _nodes.check_node_name(name)
        taken = self._nodes.get(name)
        if taken is None and self._final_node is not None and self._final_node.name == name:
            taken = self._final_node
        if taken is not None:
            raise DuplicateNodeName(f"the DAG already has a node named {name!r}: {taken!r}")

    def layer(self, *, name: str, **kwargs) -> _nodes.NodeLayer:
        """A new layer with no edges; keyword arguments go to ``NodeLayer``."""
        self._check_new_name(name)
        node = _nodes.NodeLayer(self, name=name, **kwargs)
        self._nodes[name] = node
        return node

    def subdag(self, *, name: str, **kwargs) -> _nodes.SubDAG:
        """A new sub-DAG with no edges; keyword arguments go to ``SubDAG``."""
        self._check_new_name(name)
        node = _nodes.SubDAG(self, name=name, **kwargs)
        self._nodes[name] = node
        return node

    def final(self, *, name: str, **kwargs) -> _nodes.FinalNode:
        """The DAG's FINAL node (a later call replaces it; names stay unique)."""
        self._check_new_name(name)
        self._final_node = _nodes.FinalNode(self, name=name, **kwargs)
        return self._final_node

    # -- selecting --------------------------------------------------------------
    @property
    def nodes(self) -> _nodes.Nodes:
        """Every logical node but the FINAL node."""
        return _nodes.Nodes(self._nodes.values())

    @property
    def edges(self) -> Iterator[tuple]:
        """``(parent, child)`` for every edge."""
        return iter(self._edges)

    @property
    def node_to_children(self) -> dict:
        return {node: node.children for node in self._nodes.values()}

    @property
    def node_to_parents(self) -> dict:
        return {node: node.parents for node in self._nodes.values()}

    @property
    def roots(self) -> _nodes.Nodes:
        """The nodes without parents."""
        return _nodes.Nodes(n for n in self._nodes.values() if not self._edges.parents(n))

    @property
    def leaves(self) -> _nodes.Nodes:
        """The nodes without children."""
        return _nodes.Nodes(n for n in self._nodes.values() if not self._edges.children(n))

    def select(self, selector: Callable[[_nodes.BaseNode], bool]) -> _nodes.Nodes:
        """The nodes for which ``selector(node)`` is true."""
        return _nodes.Nodes(n for n in self._nodes.values() if selector(n))

    def glob(self, pattern: str) -> _nodes.Nodes:
        """The nodes whose names match the shell pattern ``pattern`` (case-sensitive)."""
        return self.select(lambda n: fnmatch.fnmatchcase(n.name, pattern))

    # -- walking ----------------------------------------------------------------
    def walk(self, order: WalkOrder = WalkOrder.DEPTH_FIRST) -> Iterator[_nodes.BaseNode]:
        """Every node reachable from the roots, each once, depth- or breadth-first."""
        return _walk(list(self.roots), self._edges.children, order)

    def walk_ancestors(self, node, order: WalkOrder = WalkOrder.DEPTH_FIRST) -> Iterator[_nodes.BaseNode]:
        """Parents, their parents, ...; not ``node`` itself."""
        return _walk(self._edges.parents(node), self._edges.parents, order)

    def walk_descendants(self, node, order: WalkOrder = WalkOrder.DEPTH_FIRST) -> Iterator[_nodes.BaseNode]:
        """Children, their children, ...; not ``node`` itself."""
        return _walk(self._edges.children(node), self._edges.children, order)

    def cycle(self) -> list[_nodes.BaseNode] | None:
        """The nodes of one cycle among the edges, or None when there is none."""
        return _find_cycle(list(self._nodes.values()), self._edges.children)

    def describe(self) -> str:
        """A table of the logical nodes, breadth-first from the roots."""
        rows = [("Type", "Name", "# Nodes", "# Children", "Parents")]
        for node in self.walk(WalkOrder.BREADTH_FIRST):
            parents = ", ".join(f"{p.name}[{self._edges.get(p, node)!r}]" for p in self._edges.parents(node))
            kind = "Layer" if isinstance(node, _nodes.NodeLayer) else "SubDAG"
            size = str(len(node)) if isinstance(node, _nodes.NodeLayer) else ""
            rows.append((kind, node.name, size, str(len(self._edges.children(node))), parents))
        widths = [max(len(row[i]) for row in rows) for i in range(5)]
        return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)


def _walk(start: list, next_of: Callable, order) -> Iterator:
    """Each node reachable from ``start`` once: depth-first takes the newest
    pending node (first child first), breadth-first the oldest."""
    order = walk_order(order)
    seen = set()
    if order is WalkOrder.DEPTH_FIRST:
        stack = list(reversed(start))
        while stack:
            node = stack.pop()
            if node not in seen:
                seen.add(node)
                yield node
                stack.extend(reversed(next_of(node)))
    else:
        queue = collections.deque(start)
        while queue:
            node = queue.popleft()
            if node not in seen:
                seen.add(node)
                yield node
                queue.extend(next_of(node))


def _find_cycle(all_nodes: list, children_of: Callable) -> list | None:
    """One cycle (as a node list) by iterative three-colour depth-first search."""
    state: dict = {}  # node -> 1 on the current path, 2 finished
    for root in all_nodes:
        if root in state:
            continue
        path, iters = [root], [iter(children_of(root))]
        state[root] = 1
        while path:
            child = next(iters[-1], None)
            if child is None:
                state[path.pop()] = 2
                iters.pop()
            elif state.get(child) == 1:
                return path[path.index(child):]
            elif child not in state:
                state[child] = 1
                path.append(child)
                iters.append(iter(children_of(child)))
    return None
