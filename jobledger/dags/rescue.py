"""``htcondor2.dags.rescue``'s names: ``rescue``, ``find_rescue_file`` and
``_rescue`` (rescue file text applied to a DAG).  Re-exports only."""

from jobledger.eventcore.dags.rescue import rescue_text as _rescue
from jobledger.tracking.dagfiles import find_rescue_file, read_node_status, rescue

__all__ = ["rescue", "find_rescue_file", "read_node_status", "_rescue"]
