"""The parent/child graph: no cycles, and an order to walk it in."""

from __future__ import annotations

from jobledger.eventcore.errors import DagError


def check_acyclic(dag, edges: dict) -> list[str]:
    """Node names in a topological order; a cycle is a DagError at one of its PARENT lines
    (``edges``: (parent, child) -> the line that made the edge: its number in the DAG's own
    file, or (source, line))."""
    pending = {name: len(node.parents) for name, node in dag.nodes.items()}
    ready = [name for name, count in pending.items() if count == 0]
    order = []
    while ready:
        name = ready.pop()
        order.append(name)
        for child in dag.nodes[name].children:
            pending[child] -= 1
            if pending[child] == 0:
                ready.append(child)
    if len(order) == len(dag.nodes):
        return order
    cycle = _find_cycle(dag, {n for n, c in pending.items() if c > 0})
    places = [edges[(a, b)] for a, b in zip(cycle, cycle[1:])]
    source, line = min(p if isinstance(p, tuple) else (dag.source, p) for p in places)  # its first line
    raise DagError(f"cycle in the DAG: {' -> '.join(cycle)}", source, line)


def _find_cycle(dag, left: set) -> list[str]:
    """One cycle among ``left`` (nodes Kahn's walk could not reach), first node repeated.

    Each of them still waits on a parent that is also left, so walking up
    parents must come back to a node already seen."""
    seen: dict[str, int] = {}
    path = [min(left)]
    while path[-1] not in seen:
        seen[path[-1]] = len(path) - 1
        path.append(min(p for p in dag.nodes[path[-1]].parents if p in left))
    return path[seen[path[-1]]:][::-1]
