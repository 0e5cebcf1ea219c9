"""DAGMan's pure part: the DAG language, the node state machine, rescue DAGs.

``parse_dag(path, read)`` reads a DAG input file (``read(path) -> bytes`` is
the caller's I/O) into a ``Dag``; every error is a ``DagError`` naming
file:line.
"""

from .model import Dag, Node, Script, Where
from .parse import parse_dag

__all__ = ["Dag", "Node", "Script", "Where", "parse_dag"]
