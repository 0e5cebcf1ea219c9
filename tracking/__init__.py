"""Read-only followers of a pool: JobEventLog and the job trackers.

Nothing here writes to a pool; trackers read user logs, the journal or a
schedd and fold what they read into job states.
"""
