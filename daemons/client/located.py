"""The clients of one daemon (``Credd``, ``Negotiator``, ``Startd``): where it is.

A client is made from the daemon's location ad (``Collector.locate`` or a
``query``'s answer), or, given none, locates the pool's one daemon of its type.
"""

from __future__ import annotations

from typing import ClassVar

from jobledger.eventcore.classad import ClassAd
from jobledger.eventcore.enums import DaemonType


class Located:
    """A client of the daemon whose ad is ``location`` (its ``MyAddress``)."""

    daemon_type: ClassVar[DaemonType]

    def __init__(self, location: ClassAd | None = None):
        if location is None:
            from jobledger.daemons.client.api import Collector
            location = Collector().locate(self.daemon_type)
        if not isinstance(location, ClassAd):
            raise TypeError("location must be a ClassAd")
        self._addr = location["MyAddress"]
