"""DAGMan's node status file (``NODE_STATUS_FILE``) read back.

The file is a series of new-syntax ClassAds: one ``Type = "DagStatus"`` ad,
one ``Type = "NodeStatus"`` ad per node, and a closing ``Type = "StatusEnd"``
ad.  ``NodeStatus`` numbers the states as DAGMan does.
"""

from __future__ import annotations

import enum

import attrs

from jobledger.eventcore.classad import ParserType, parseAds
from jobledger.eventcore.errors import ClassAdError, DAGFileError


class NodeStatus(enum.IntEnum):
    """A node's (and the DAG's) state in the node status file."""

    NOT_READY = 0
    READY = 1
    PRERUN = 2
    SUBMITTED = 3
    POSTRUN = 4
    DONE = 5
    ERROR = 6
    FUTILE = 7


@attrs.frozen
class NodeState:
    """One ``NodeStatus`` ad."""

    name: str
    status: NodeStatus
    details: str = ""
    retry_count: int = 0
    job_procs_queued: int = 0
    job_procs_held: int = 0


@attrs.frozen
class DAGStatusReport:
    """The whole file: the DAG's ad, the nodes' states by name, the end ad."""

    status: NodeStatus
    dag: dict
    nodes: dict[str, NodeState]
    end_time: int | None = None
    next_update: int | None = None

    @property
    def complete(self) -> bool:
        """The file ended with its StatusEnd ad (DAGMan writes it last)."""
        return self.end_time is not None

    def by_status(self, status: NodeStatus) -> list[str]:
        return [name for name, node in self.nodes.items() if node.status == status]


def _status(value, source: str, what: str) -> NodeStatus:
    try:
        if isinstance(value, bool):
            raise TypeError(value)
        return NodeStatus(value)
    except (ValueError, TypeError):
        raise DAGFileError(f"{what}: {value!r} is not a node status (0-7)", source) from None


def _int(ad: dict, key: str, default: int = 0) -> int:
    value = ad.get(key, default)
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def parse_node_status(text: str, source: str = "<node status file>") -> DAGStatusReport:
    """The node status file's ads as a report; DAGFileError when it is not one."""
    try:
        ads = [dict(ad) for ad in parseAds(text, ParserType.New)]
    except (ClassAdError, ValueError) as error:
        raise DAGFileError(f"not a node status file: {error}", source) from None
    dag_ad, nodes, end = None, {}, {}
    for ad in ads:
        kind = ad.get("Type")
        if kind == "DagStatus":
            dag_ad = ad
        elif kind == "NodeStatus":
            name = ad.get("Node")
            if not isinstance(name, str):
                raise DAGFileError(f"a NodeStatus ad without a Node name: {ad!r}", source)
            nodes[name] = NodeState(name, _status(ad.get("NodeStatus"), source, f"node {name}"),
                                    str(ad.get("StatusDetails", "")), _int(ad, "RetryCount"),
                                    _int(ad, "JobProcsQueued"), _int(ad, "JobProcsHeld"))
        elif kind == "StatusEnd":
            end = ad
        else:
            raise DAGFileError(f"an ad of unknown Type {kind!r}", source)
    if dag_ad is None:
        raise DAGFileError("no DagStatus ad", source)
    return DAGStatusReport(_status(dag_ad.get("DagStatus"), source, "DagStatus"), dag_ad, nodes,
                           end.get("EndTime"), end.get("NextUpdate"))
