-- The SQLite store of one pool (LOCAL_DIR/journal.sqlite); its version and migrations:
-- daemons/storage/schema.py.
-- The journal is append-only; everything else is a projection of it and
-- records the journal position it reflects.
CREATE TABLE IF NOT EXISTS meta (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS journal (
    position INTEGER PRIMARY KEY,     -- 1, 2, 3, ... no gaps
    time     REAL    NOT NULL,        -- Unix time of the append
    cluster  INTEGER NOT NULL,
    proc     INTEGER NOT NULL,        -- -1: the cluster itself
    type     TEXT    NOT NULL,        -- cluster | proc | set | event | action | leave
    payload  TEXT    NOT NULL,        -- canonical JSON with "v" (schemas/*.json)
    key      TEXT,                    -- identity for idempotent ingestion
    checksum INTEGER NOT NULL,        -- CRC-32 chained over the previous row's
    event    INTEGER                  -- ULog number of an `event` record (from its payload)
);
CREATE UNIQUE INDEX IF NOT EXISTS journal_key ON journal(key) WHERE key IS NOT NULL;

-- position each projection reflects, and the journal checksum at that position
CREATE TABLE IF NOT EXISTS projection (
    name     TEXT PRIMARY KEY,
    position INTEGER NOT NULL,
    checksum INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS queue_clusters (
    cluster INTEGER PRIMARY KEY,
    ad      TEXT NOT NULL                 -- attribute -> ClassAd expression text (daemons/adrow.py)
);
CREATE TABLE IF NOT EXISTS queue_jobs (
    cluster INTEGER NOT NULL,
    proc    INTEGER NOT NULL,
    status  INTEGER NOT NULL,
    owner   TEXT COLLATE NOCASE,          -- ClassAd == on strings ignores case
    ad      TEXT NOT NULL,                -- the proc's own attributes (daemons/adrow.py)
    PRIMARY KEY (cluster, proc)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS queue_jobs_status ON queue_jobs(status);
CREATE INDEX IF NOT EXISTS queue_jobs_owner ON queue_jobs(owner);
-- jobs per (cluster, status), kept with queue_jobs (daemons/storage/queue_tables.py)
CREATE TABLE IF NOT EXISTS queue_counts (
    cluster INTEGER NOT NULL,
    status  INTEGER NOT NULL,
    n       INTEGER NOT NULL,
    PRIMARY KEY (cluster, status)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS history (
    position        INTEGER PRIMARY KEY,  -- of the job's `leave` record
    cluster         INTEGER NOT NULL,
    proc            INTEGER NOT NULL,
    owner           TEXT,
    completion_date INTEGER NOT NULL,
    ad              TEXT NOT NULL         -- full (merged) ad (daemons/adrow.py)
);
CREATE INDEX IF NOT EXISTS history_job ON history(cluster, proc);
-- user-log and event-log writers: what each file holds (exactly-once writing)
CREATE TABLE IF NOT EXISTS log_files (
    path     TEXT PRIMARY KEY,
    position INTEGER NOT NULL,            -- last journal position written to it
    offset   INTEGER NOT NULL,            -- its size after that write
    sequence INTEGER NOT NULL DEFAULT 0,  -- event log: rotation sequence
    ctime    INTEGER NOT NULL DEFAULT 0   -- event log: creation time in its header
);
CREATE TABLE IF NOT EXISTS log_jobs (
    cluster INTEGER NOT NULL,
    proc    INTEGER NOT NULL,             -- -1: cluster ad
    path    TEXT NOT NULL,
    format  TEXT NOT NULL DEFAULT 'text',
    PRIMARY KEY (cluster, proc)
) WITHOUT ROWID;
-- user logs that could not be written (path unwritable, a directory, ...):
-- their events after `position` wait until a later catch-up succeeds
CREATE TABLE IF NOT EXISTS log_failures (
    path     TEXT PRIMARY KEY,
    position INTEGER NOT NULL,            -- last position written before the failure
    error    TEXT NOT NULL
);
