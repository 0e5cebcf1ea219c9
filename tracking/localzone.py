"""The process's local time zone as an ``eventcore`` ``Zone``.

User-log timestamps without ``Z`` are local time of the writer, and HTCondor's
reader interprets them in the reader's local time (``TZ``).  eventcore is
pure and takes the zone as an argument; this is the one readers pass.
"""

from __future__ import annotations

import time

__all__ = ["LocalZone", "LOCAL_ZONE"]


class LocalZone:
    """C ``mktime``/``localtime`` semantics (out-of-range fields normalised)."""

    def to_epoch(self, y, mo, d, h, mi, s):
        return int(time.mktime((y, mo, d, h, mi, s, 0, 0, -1)))

    def from_epoch(self, epoch):
        return time.localtime(epoch)[:6]

    def __repr__(self) -> str:
        return "LOCAL_ZONE"

    def __reduce__(self):
        return (_local_zone, ())


def _local_zone():
    return LOCAL_ZONE


LOCAL_ZONE = LocalZone()
