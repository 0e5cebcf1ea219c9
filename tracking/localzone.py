"""The process's local time zone as an ``eventcore`` ``Zone``.

User-log timestamps without ``Z`` are local time of the writer, and HTCondor's
reader interprets them in the reader's local time (``TZ``).  eventcore is
pure and takes the zone as an argument; this is the one readers pass.
"""

from __future__ import annotations

import calendar
import datetime
import os
import time

__all__ = ["LocalZone", "LOCAL_ZONE", "LocalTimezone", "LOCAL_TZINFO"]


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


class LocalTimezone(datetime.tzinfo):
    """The process's local zone as a ``datetime.tzinfo`` (for the writers).

    Each instant gets the offset in force at that instant (``localtime``'s
    ``tm_gmtoff``), as HTCondor writes each event in local time of its own
    moment: a summer event under a DST zone is written in summer time even
    when the writer started in winter.  ``astimezone(LOCAL_TZINFO)`` returns
    a time carrying that instant's fixed offset, so the hour repeated when
    the clocks go back keeps both of its offsets.
    """

    def utcoffset(self, dt):
        return datetime.timedelta(seconds=self._local(dt).tm_gmtoff)

    def dst(self, dt):
        return datetime.timedelta(0)

    def tzname(self, dt):
        return self._local(dt).tm_zone

    @staticmethod
    def _local(dt):
        naive = dt.replace(tzinfo=None)
        return time.localtime(time.mktime(naive.timetuple()))

    @staticmethod
    def zone_key() -> tuple:
        """The process's zone as ``time.tzset`` last set it (and the ``TZ`` it was
        set from): the same key, the same local times (``eventcore``'s writer keeps
        a second's text under it)."""
        return os.environ.get("TZ"), time.tzname, time.timezone, time.altzone, time.daylight

    def fromutc(self, dt):
        epoch = calendar.timegm(dt.replace(tzinfo=None).timetuple())
        local = time.localtime(epoch)
        zone = datetime.timezone(datetime.timedelta(seconds=local.tm_gmtoff), local.tm_zone)
        return (dt + datetime.timedelta(seconds=local.tm_gmtoff)).replace(tzinfo=zone)


LOCAL_TZINFO = LocalTimezone()
