"""``from jobledger.tracking import UserLogTracker, ...``: job trackers.  Re-exports only.

- ``UserLogTracker``: follows user logs (event-based, one watch per directory);
- ``PollTracker``: queries a schedd at most once a minute (narrow projection,
  per-cluster summaries, history for jobs that left);
- ``JournalTracker``: follows a pool's journal from a position, no logs needed;
- ``CombinedTracker``: user logs plus a rare schedd cross-check;
- ``all_done``, ``any_held``, ``any_failed``: conditions for ``wait_until``;
- ``JobState``, ``Change``: what trackers hold and report.
"""

from eventcore.projections.jobstate import Change, JobState
from tracking.combined import CombinedTracker, Discrepancy
from tracking.conditions import all_done, any_failed, any_held
from tracking.journal import JournalTracker
from tracking.poll import PollTracker
from tracking.summary import BatchSummary, summarize
from tracking.userlogs import UserLogTracker

__all__ = [
    "BatchSummary", "Change", "CombinedTracker", "Discrepancy", "JobState", "JournalTracker",
    "PollTracker", "UserLogTracker", "all_done", "any_failed", "any_held", "summarize",
]
