"""v1's ``Schedd`` and ``Collector`` (``import jobledger.v1 as htcondor``): htcondor2's,
with what v1 did differently -- a submit description that makes no job ad is an
``HTCondorInternalError`` ("Failed to create job ad"); ``history`` and ``jobEpochHistory`` stream as a
``HistoryIterator``; locating a daemon of no kind (``DaemonTypes.none``/``Any``) is an
``HTCondorEnumError`` ("Unknown daemon type.", collector.cpp's convert_to_ad_type).
"""

from __future__ import annotations

from jobledger.daemons.client.api import Collector as _Collector
from jobledger.daemons.client.api import Schedd as _Schedd
from jobledger.eventcore.enums import DaemonType
from jobledger.eventcore.enums_v1 import as_v2
from jobledger.eventcore.classad import ClassAd
from jobledger.eventcore.errors import (HTCondorEnumError, HTCondorInternalError, HTCondorValueError, SubmitError,
                                        SubmitInternalError)
from jobledger.daemons.query_streams import HistoryIterator

__all__ = ["Schedd", "Collector"]


def v1_submit_error(exc: SubmitError) -> SubmitError:
    """What v1 raised for a submit description that made no job ad: HTCondorInternalError
    "Failed to create job ad, errmsg=..." (schedd.cpp; htcondor2 says the same as an
    HTCondorException)."""
    if isinstance(exc, HTCondorInternalError):
        return exc
    return SubmitInternalError(f"Failed to create job ad, errmsg={exc}")


class Schedd(_Schedd):
    """A schedd of the pool, as the v1 bindings' ``htcondor.Schedd``."""

    def submit(self, description, count: int = 0, spool: bool = False, ad_results=None,  # type: ignore[override]
               itemdata=None, queue: str | None = None):
        """v1's ``submit(description, count=1, spool=False, ad_results=None, itemdata=None)``, in
        v1's order.  A raw job ClassAd (v1's deprecated form, schedd.cpp Schedd::submit before
        the v1 code was removed) makes one cluster of ``count`` procs (0 taken as 1) and returns
        its id, filling a list ``ad_results`` with the procs' ads; itemdata is refused with it.
        A ``Submit`` goes as htcondor2's (count 0: its queue statement)."""
        if isinstance(description, ClassAd):
            if itemdata is not None:
                raise HTCondorValueError("itemdata cannot be used when submitting raw ClassAds")
            if isinstance(count, bool) or not isinstance(count, int):
                raise TypeError("count must be an int")
            if count < 0:
                raise HTCondorValueError(f"count must not be negative (got {count})")
            return self._submit_ad(description, count or 1, spool, ad_results)
        try:
            return super().submit(description, count, spool, itemdata, queue)
        except SubmitError as exc:
            raise v1_submit_error(exc) from None

    def history(self, constraint=None, projection=[], match: int = -1,  # type: ignore[override]
                since=None) -> HistoryIterator:
        """The history (newest first) as a ``HistoryIterator``: read as it comes."""
        return HistoryIterator(self._address, "history", self._history_args(constraint, projection, match, since))

    def jobEpochHistory(self, constraint=None, projection=[], match: int = -1,  # type: ignore[override]
                        since=None, **kwargs) -> HistoryIterator:
        """A record per run attempt (newest first), as a ``HistoryIterator``."""
        return HistoryIterator(self._address, "epoch_history",
                               self._epoch_args(constraint, projection, match, since, kwargs))


class Collector(_Collector):
    """The pool's collector, as the v1 bindings' ``htcondor.Collector``."""

    @staticmethod
    def _kind(daemon_type) -> None:
        if as_v2(daemon_type, DaemonType) in (DaemonType.none, DaemonType.Any):
            raise HTCondorEnumError("Unknown daemon type.")

    def locate(self, daemon_type, name: str | None = None):
        self._kind(daemon_type)
        return super().locate(daemon_type, name)

    def locateAll(self, daemon_type) -> list:
        self._kind(daemon_type)
        return super().locateAll(daemon_type)
