"""``htcondor2.dags.node``'s names.  Re-exports only."""

from jobledger.eventcore.dags.nodes import BaseNode, DAGAbortCondition, FinalNode, NodeLayer, Nodes, Script, SubDAG

__all__ = ["BaseNode", "NodeLayer", "SubDAG", "FinalNode", "Nodes", "Script", "DAGAbortCondition"]
