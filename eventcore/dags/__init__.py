"""Building DAGMan workflows in Python (htcondor.dags), pure.

graph.py      DAG, DotConfig, NodeStatusFile
nodes.py      NodeLayer, SubDAG, FinalNode, Nodes, Script, DAGAbortCondition
edges.py      ManyToMany, OneToOne, Grouper, Slicer (and join nodes)
formatter.py  node names <layer>:<index> and back
walk_order.py WalkOrder
render.py     the DAG description text and the files beside it
rescue.py     rescue files: parse, apply, pick the newest
nodestatus.py the node status file: NodeStatus, parse

Writing and reading files is done by daemons/dagfiles.py and
tracking/dagfiles.py; ``jobledger.dags`` re-exports both.
"""

from .edges import BaseEdge, Grouper, JoinFactory, JoinNode, ManyToMany, OneToOne, Slicer
from .formatter import DEFAULT_SEPARATOR, NodeNameFormatter, SimpleFormatter
from .graph import DAG, DotConfig, NodeStatusFile
from .nodes import BaseNode, DAGAbortCondition, FinalNode, NodeLayer, Nodes, Script, SubDAG
from .nodestatus import DAGStatusReport, NodeState, NodeStatus, parse_node_status
from .render import CONFIG_FILE_NAME, DEFAULT_DAG_FILE_NAME, NOOP_SUBMIT_FILE_NAME, DAGRenderer
from .rescue import RescueState, apply_rescue, latest_rescue_name, parse_rescue, rescue_text
from .walk_order import WalkOrder

__all__ = [
    "BaseEdge", "Grouper", "JoinFactory", "JoinNode", "ManyToMany", "OneToOne", "Slicer",
    "DEFAULT_SEPARATOR", "NodeNameFormatter", "SimpleFormatter", "DAG", "DotConfig", "NodeStatusFile",
    "BaseNode", "DAGAbortCondition", "FinalNode", "NodeLayer", "Nodes", "Script", "SubDAG",
    "DAGStatusReport", "NodeState", "NodeStatus", "parse_node_status",
    "CONFIG_FILE_NAME", "DEFAULT_DAG_FILE_NAME", "NOOP_SUBMIT_FILE_NAME", "DAGRenderer",
    "RescueState", "apply_rescue", "latest_rescue_name", "parse_rescue", "rescue_text", "WalkOrder",
]
