"""``htcondor2.dags.dag``'s names.  Re-exports only."""

from jobledger.eventcore.dags.graph import DAG, DotConfig, EdgeStore, NodeStatusFile

__all__ = ["DAG", "DotConfig", "NodeStatusFile", "EdgeStore"]
