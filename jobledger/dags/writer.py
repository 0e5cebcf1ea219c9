"""``htcondor2.dags.writer``'s names: ``DAGWriter`` and ``write_dag``.  Re-exports only."""

from jobledger.daemons.dagfiles import DAGWriter, write_dag
from jobledger.eventcore.dags.render import CONFIG_FILE_NAME, DEFAULT_DAG_FILE_NAME, NOOP_SUBMIT_FILE_NAME

__all__ = ["DAGWriter", "write_dag", "CONFIG_FILE_NAME", "DEFAULT_DAG_FILE_NAME", "NOOP_SUBMIT_FILE_NAME"]
