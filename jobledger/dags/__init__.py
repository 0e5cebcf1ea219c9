"""``import jobledger.dags`` stands in for ``import htcondor2.dags``: build a
DAGMan workflow in Python and write its files.

Re-exports only, here and in the submodules named as htcondor2.dags' (dag,
node, edges, formatter, walk_order, writer, rescue, exceptions): the DAG
model is eventcore/dags/, writing is daemons/dagfiles.py, reading rescue
and node status files is tracking/dagfiles.py.  Beyond htcondor2.dags: ``NodeStatus``, ``NodeState``,
``DAGStatusReport`` and ``read_node_status`` for DAGMan's node status file.
tests/dags/test_facade.py pins the names.
"""

from jobledger.eventcore.dags import (CONFIG_FILE_NAME, DAG, DEFAULT_DAG_FILE_NAME, DEFAULT_SEPARATOR, BaseEdge, BaseNode,
                            DAGAbortCondition, DAGStatusReport, DotConfig, FinalNode, Grouper, JoinFactory, JoinNode,
                            ManyToMany, NodeLayer, NodeNameFormatter, Nodes, NodeState, NodeStatus, NodeStatusFile,
                            OneToOne, Script, SimpleFormatter, Slicer, SubDAG, WalkOrder)
from jobledger.dags import exceptions
from jobledger.dags.rescue import find_rescue_file, read_node_status, rescue
from jobledger.dags.writer import write_dag

__all__ = [
    "DAG", "DotConfig", "NodeStatusFile", "BaseNode", "NodeLayer", "SubDAG", "Script", "DAGAbortCondition",
    "FinalNode", "Nodes", "WalkOrder", "JoinNode", "JoinFactory", "BaseEdge", "ManyToMany", "OneToOne",
    "Grouper", "Slicer", "DEFAULT_DAG_FILE_NAME", "CONFIG_FILE_NAME", "write_dag", "DEFAULT_SEPARATOR",
    "NodeNameFormatter", "SimpleFormatter", "rescue", "find_rescue_file", "exceptions",
    # ours: the node status file
    "NodeStatus", "NodeState", "DAGStatusReport", "read_node_status",
]
