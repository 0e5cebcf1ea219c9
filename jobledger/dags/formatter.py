"""``htcondor2.dags.formatter``'s names.  Re-exports only."""

from jobledger.eventcore.dags.formatter import DEFAULT_SEPARATOR, NodeNameFormatter, SimpleFormatter

__all__ = ["DEFAULT_SEPARATOR", "NodeNameFormatter", "SimpleFormatter"]
