"""``htcondor2.dags.edges``'s names.  Re-exports only."""

from jobledger.eventcore.dags.edges import BaseEdge, Grouper, JoinFactory, JoinNode, ManyToMany, OneToOne, Slicer

__all__ = ["BaseEdge", "ManyToMany", "OneToOne", "Grouper", "Slicer", "JoinNode", "JoinFactory"]
