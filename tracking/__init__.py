"""Read-only followers of a pool: JobEventLog and the job trackers (``jobledger.tracking``).

``from jobledger.tracking import UserLogTracker, ...``: this module only re-exports the
trackers (``UserLogTracker``, ``PollTracker``, ``JournalTracker``, ``CombinedTracker``), the
conditions for ``wait_until`` (``all_done``, ``any_held``, ``any_failed``) and what trackers
hold and report (``JobState``, ``Change``), each loaded on first use (PEP 562): a program
that only reads a user log with ``JobEventLog`` (tracking/jobeventlog.py) loads none of the
trackers.

Nothing here writes to a pool; trackers read user logs, the journal or a
schedd and fold what they read into job states with the one tolerant fold
(``eventcore.projections.jobstate``).

    core.py        what every tracker shares: steps, callbacks, wait_until,
                   changes(), the worker thread, checkpoint delivery
    jobtable.py    the job table: {JobId: JobState}, finished jobs on disk
    checkpoint.py  states + positions + memo in one SQLite transaction
    userlogs.py    event-based: many user logs, one watch per directory
    logcursor.py   one log's offset, read on with JobEventLog
    watch.py       per-directory change notification (watchdog), polling fallback
    filewake.py    JobEventLog's wait at a log's end: inotify on the file, else a sleep
    poll.py        poll-based: rate-limited, narrow, summarised schedd queries
    journal.py     a pool's SQLite journal, read-only, by position
    combined.py    user logs plus a rare schedd cross-check
    conditions.py  all_done / any_held / any_failed for wait_until
    summary.py     per-batch counts and progress bars (``jobledger watch``)
"""

import importlib as _importlib

# module -> the names re-exported from it
_REEXPORTS = {
    "jobledger.eventcore.projections.jobstate": ("Change", "JobState"),
    "jobledger.tracking.combined": ("CombinedTracker", "Discrepancy"),
    "jobledger.tracking.conditions": ("all_done", "any_failed", "any_held"),
    "jobledger.tracking.journal": ("JournalTracker",),
    "jobledger.tracking.poll": ("PollTracker",),
    "jobledger.tracking.summary": ("BatchSummary", "summarize"),
    "jobledger.tracking.userlogs": ("UserLogTracker",),
}
_ORIGIN = {name: module for module, names in _REEXPORTS.items() for name in names}

__all__ = [
    "BatchSummary", "Change", "CombinedTracker", "Discrepancy", "JobState", "JournalTracker",
    "PollTracker", "UserLogTracker", "all_done", "any_failed", "any_held", "summarize",
]


def __getattr__(name):
    module = _ORIGIN.get(name)
    if module is None:
        raise AttributeError(f"module 'jobledger.tracking' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_ORIGIN))
