"""Read-only followers of a pool: JobEventLog and the job trackers.

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
    poll.py        poll-based: rate-limited, narrow, summarised schedd queries
    journal.py     a pool's SQLite journal, read-only, by position
    combined.py    user logs plus a rare schedd cross-check
    conditions.py  all_done / any_held / any_failed for wait_until
    summary.py     per-batch counts and progress bars (``jobledger watch``)
"""
