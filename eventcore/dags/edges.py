"""Edges between logical nodes: which underlying nodes depend on which.

An edge answers ``get_edges(parent, child, join_factory)`` with edge specs
``(parent_indices, child_indices)``; either side (not both) may be a
``JoinNode`` instead, a NOOP node that turns N x M dependencies into N + M
lines.  A SubDAG, and a layer of one node, has the single index 0.
"""

from __future__ import annotations

import abc
import itertools

from jobledger.eventcore.errors import IncompatibleGrouper, OneToOneEdgeNeedsSameNumberOfVars


class JoinNode:
    """A NOOP node joining a group of parents to a group of children."""

    def __init__(self, id: int):
        self.id = id

    def __repr__(self) -> str:
        return f"JoinNode({self.id})"


class JoinFactory:
    """Hands out join nodes numbered 0, 1, ... and remembers them."""

    def __init__(self):
        self.id_generator = itertools.count(0)
        self.joins: list[JoinNode] = []

    def get_join_node(self) -> JoinNode:
        join = JoinNode(next(self.id_generator))
        self.joins.append(join)
        return join


class BaseEdge(abc.ABC):
    """The kind of dependency between two logical nodes."""

    @abc.abstractmethod
    def get_edges(self, parent, child, join_factory: JoinFactory):
        """Yield edge specs ``(parents, children)`` (index tuples or a JoinNode)."""

    def __repr__(self) -> str:
        return type(self).__name__


class ManyToMany(BaseEdge):
    """Every child node depends on every parent node (through one join node
    when both sides have more than one node)."""

    def get_edges(self, parent, child, join_factory: JoinFactory):
        parents, children = tuple(range(len(parent))), tuple(range(len(child)))
        if not parents or not children:
            return
        if len(parents) == 1 or len(children) == 1:
            yield parents, children
        else:
            join = join_factory.get_join_node()
            yield parents, join
            yield join, children


class OneToOne(BaseEdge):
    """Child node i depends on parent node i; both layers have the same size."""

    def get_edges(self, parent, child, join_factory: JoinFactory):
        if len(parent) != len(child):
            raise OneToOneEdgeNeedsSameNumberOfVars(
                f"OneToOne edge: parent layer {parent.name!r} has {len(parent)} nodes, "
                f"child layer {child.name!r} has {len(child)}")
        for index in range(len(parent)):
            yield (index,), (index,)


class Grouper(BaseEdge):
    """Cut each layer into consecutive chunks and join chunk i of the parent
    to chunk i of the child; both must cut evenly into the same number of chunks."""

    def __init__(self, parent_chunk_size: int = 1, child_chunk_size: int = 1):
        for what, size in (("parent", parent_chunk_size), ("child", child_chunk_size)):
            if not isinstance(size, int) or size < 1:
                raise IncompatibleGrouper(f"Grouper: the {what} chunk size must be a positive integer, "
                                          f"not {size!r}")
        self.parent_chunk_size = parent_chunk_size
        self.child_chunk_size = child_chunk_size

    def __repr__(self) -> str:
        return f"Grouper(parent_chunk_size={self.parent_chunk_size}, child_chunk_size={self.child_chunk_size})"

    def get_edges(self, parent, child, join_factory: JoinFactory):
        parent_chunks = self._chunks(parent, self.parent_chunk_size, "parent")
        child_chunks = self._chunks(child, self.child_chunk_size, "child")
        if len(parent_chunks) != len(child_chunks):
            raise IncompatibleGrouper(
                f"{self!r}: parent layer {parent.name!r} makes {len(parent_chunks)} chunks of "
                f"{self.parent_chunk_size}, child layer {child.name!r} makes {len(child_chunks)} chunks of "
                f"{self.child_chunk_size}")
        for parents, children in zip(parent_chunks, child_chunks):
            join = join_factory.get_join_node()
            yield parents, join
            yield join, children

    def _chunks(self, node, size: int, what: str) -> list[tuple[int, ...]]:
        count = len(node)
        if count % size:
            raise IncompatibleGrouper(f"{self!r}: the {count} nodes of {what} layer {node.name!r} do not "
                                      f"divide into chunks of {size}")
        return [tuple(range(start, start + size)) for start in range(0, count, size)]


class Slicer(BaseEdge):
    """Pair the parent nodes picked by ``parent_slice`` one-to-one with the
    child nodes picked by ``child_slice``; the shorter selection ends the pairing."""

    def __init__(self, parent_slice: slice = slice(None), child_slice: slice = slice(None)):
        self.parent_slice = parent_slice
        self.child_slice = child_slice

    def __repr__(self) -> str:
        return f"Slicer(parent_slice={self.parent_slice}, child_slice={self.child_slice})"

    def get_edges(self, parent, child, join_factory: JoinFactory):
        picked_parents = range(len(parent))[self.parent_slice]
        picked_children = range(len(child))[self.child_slice]
        for parent_index, child_index in zip(picked_parents, picked_children):
            yield (parent_index,), (child_index,)
