"""``WalkOrder``: the two orders a walk over a DAG can take."""

from __future__ import annotations

import enum

from jobledger.eventcore.errors import UnrecognizedWalkOrder


class WalkOrder(str, enum.Enum):
    """Depth-first visits a node's children before its siblings;
    breadth-first visits siblings first."""

    DEPTH_FIRST = "DEPTH"
    BREADTH_FIRST = "BREADTH"

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.name}"


def walk_order(order) -> WalkOrder:
    """``order`` as a WalkOrder (a member or its value), else UnrecognizedWalkOrder."""
    try:
        return WalkOrder(order)
    except ValueError:
        raise UnrecognizedWalkOrder(f"unrecognized WalkOrder: {order!r} (use WalkOrder.DEPTH_FIRST "
                                    f"or WalkOrder.BREADTH_FIRST)") from None
