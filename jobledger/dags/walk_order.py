"""``htcondor2.dags.walk_order``'s name.  Re-exports only."""

from jobledger.eventcore.dags.walk_order import WalkOrder

__all__ = ["WalkOrder"]
