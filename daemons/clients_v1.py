"""v1's ``Schedd`` (``import jobledger.v1 as htcondor``): htcondor2's, with what v1 did
differently -- ``history`` and ``jobEpochHistory`` stream as a ``HistoryIterator``.
"""

from __future__ import annotations

from jobledger.daemons.clients import Schedd as _Schedd
from jobledger.daemons.query_streams import HistoryIterator

__all__ = ["Schedd"]


class Schedd(_Schedd):
    """A schedd of the pool, as the v1 bindings' ``htcondor.Schedd``."""

    def history(self, constraint=None, projection=[], match: int = -1,  # type: ignore[override]
                since=None) -> HistoryIterator:
        """The history (newest first) as a ``HistoryIterator``: read as it comes."""
        return HistoryIterator(self._address, "history", self._history_args(constraint, projection, match, since))

    def jobEpochHistory(self, constraint=None, projection=[], match: int = -1,  # type: ignore[override]
                        since=None, **kwargs) -> HistoryIterator:
        """A record per run attempt (newest first), as a ``HistoryIterator``."""
        return HistoryIterator(self._address, "epoch_history",
                               self._epoch_args(constraint, projection, match, since, kwargs))
