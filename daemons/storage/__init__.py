"""Everything on ``journal.sqlite``: the only package that holds SQL on it.

==================  ==========================================================
module              owns
==================  ==========================================================
``schema``          the DDL (schemas/store.sql), its version, the migrations
``errors``          the one mapping of sqlite3 errors to eventcore.errors
``store``           the writer: append, group commit, expected-head check,
                    idempotency keys, high-water mark, recovery, committed
                    entries in memory for the projector
``queue_tables``    the queue fold's snapshot tables (write, catch up, rebuild)
``views``           queue and history reads (condor_q, condor_history)
``queryplan``       constraints -> SQL over the queue's indexes
``cursors``         the user-log writer's cursor, file states, targets, failures
``reader``          read-only access for tracking, audit, checks and tools
``sql``             ``jobledger journal sql``: read-only SQL for users
==================  ==========================================================

Nothing is imported here, so ``tracking`` can import ``daemons.storage.reader``
(which needs only eventcore and ``schema``/``errors``) without the daemons.
"""
