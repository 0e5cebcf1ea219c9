"""``htcondor2.dags.exceptions``: the errors of building, writing and rescuing
DAGs (all ``JobledgerError``s; see eventcore/errors.py).  Re-exports only."""

from jobledger.eventcore.errors import (CannotInvertFormat, DAGFileError, DAGsException, DuplicateNodeName,
                              IncompatibleGrouper, InvalidDAG, LayerNameContainsSeparator, NoRescueFileFound,
                              OneToOneEdgeNeedsSameNumberOfVars, UnrecognizedWalkOrder)

__all__ = [
    "CannotInvertFormat", "DAGsException", "DuplicateNodeName", "IncompatibleGrouper",
    "LayerNameContainsSeparator", "NoRescueFileFound", "OneToOneEdgeNeedsSameNumberOfVars",
    "UnrecognizedWalkOrder",
    # ours: a DAG DAGMan would reject; an unreadable rescue or node status file
    "InvalidDAG", "DAGFileError",
]
