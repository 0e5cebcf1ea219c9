-- journal.sqlite written by jobledger at schema version 1 (main before the
-- storage package), dumped with sqlite3's iterdump: tests/journal/test_storage.py
BEGIN TRANSACTION;
CREATE TABLE history (
    position        INTEGER PRIMARY KEY,  -- of the job's `leave` record
    cluster         INTEGER NOT NULL,
    proc            INTEGER NOT NULL,
    owner           TEXT,
    completion_date INTEGER NOT NULL,
    ad              TEXT NOT NULL         -- full (merged) ad (daemons/adrow.py)
);
INSERT INTO "history" VALUES(18,1,0,'user1',1700000020,'Args"run 0"ClusterId1Cmd"/bin/true"CompletionDate1700000020EnteredCurrentStatus1700000020ExitBySignalfalseExitCode0JobCurrentStartDate1700000010JobStartDate1700000010JobStatus4LastJobStatus2NumJobCompletions1NumJobStarts1NumShadowStarts1Owner"user1"ProcId0QDate1700000001UserLog"/nonexistent-v1/1.log"');
CREATE TABLE journal (
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
INSERT INTO "journal" VALUES(1,1700000001.0,1,-1,'cluster','{"ad":{"Cmd":"\"/bin/true\"","Owner":"\"user1\"","QDate":"1700000001","UserLog":"\"/nonexistent-v1/1.log\""},"v":1}','submit-1',639182576,NULL);
INSERT INTO "journal" VALUES(2,1700000001.0,1,0,'proc','{"ad":{"Args":"\"run 0\"","JobStatus":"1"},"v":1}',NULL,12921840,NULL);
INSERT INTO "journal" VALUES(3,1700000001.0,1,0,'event','{"event":{"attrs":{},"cluster":1,"proc":0,"subproc":0,"timestamp":1700000001,"type":0,"v":1},"v":1}',NULL,2766870389,0);
INSERT INTO "journal" VALUES(4,1700000001.0,1,1,'proc','{"ad":{"Args":"\"run 1\"","JobStatus":"1"},"v":1}',NULL,1790211815,NULL);
INSERT INTO "journal" VALUES(5,1700000001.0,1,1,'event','{"event":{"attrs":{},"cluster":1,"proc":1,"subproc":0,"timestamp":1700000001,"type":0,"v":1},"v":1}',NULL,3975248994,0);
INSERT INTO "journal" VALUES(6,1700000002.0,2,-1,'cluster','{"ad":{"Cmd":"\"/bin/true\"","Owner":"\"user2\"","QDate":"1700000002","UserLog":"\"/nonexistent-v1/2.log\""},"v":1}','submit-2',332969246,NULL);
INSERT INTO "journal" VALUES(7,1700000002.0,2,0,'proc','{"ad":{"Args":"\"run 0\"","JobStatus":"1"},"v":1}',NULL,1346303005,NULL);
INSERT INTO "journal" VALUES(8,1700000002.0,2,0,'event','{"event":{"attrs":{},"cluster":2,"proc":0,"subproc":0,"timestamp":1700000002,"type":0,"v":1},"v":1}',NULL,1827291965,0);
INSERT INTO "journal" VALUES(9,1700000002.0,2,1,'proc','{"ad":{"Args":"\"run 1\"","JobStatus":"1"},"v":1}',NULL,2269581278,NULL);
INSERT INTO "journal" VALUES(10,1700000002.0,2,1,'event','{"event":{"attrs":{},"cluster":2,"proc":1,"subproc":0,"timestamp":1700000002,"type":0,"v":1},"v":1}',NULL,3294052225,0);
INSERT INTO "journal" VALUES(11,1700000003.0,3,-1,'cluster','{"ad":{"Cmd":"\"/bin/true\"","Owner":"\"user3\"","QDate":"1700000003","UserLog":"\"/nonexistent-v1/3.log\""},"v":1}','submit-3',3181254579,NULL);
INSERT INTO "journal" VALUES(12,1700000003.0,3,0,'proc','{"ad":{"Args":"\"run 0\"","JobStatus":"1"},"v":1}',NULL,452679761,NULL);
INSERT INTO "journal" VALUES(13,1700000003.0,3,0,'event','{"event":{"attrs":{},"cluster":3,"proc":0,"subproc":0,"timestamp":1700000003,"type":0,"v":1},"v":1}',NULL,2327556498,0);
INSERT INTO "journal" VALUES(14,1700000003.0,3,1,'proc','{"ad":{"Args":"\"run 1\"","JobStatus":"1"},"v":1}',NULL,829558891,NULL);
INSERT INTO "journal" VALUES(15,1700000003.0,3,1,'event','{"event":{"attrs":{},"cluster":3,"proc":1,"subproc":0,"timestamp":1700000003,"type":0,"v":1},"v":1}',NULL,3194101514,0);
INSERT INTO "journal" VALUES(16,1700000020.0,1,0,'event','{"event":{"attrs":{},"cluster":1,"proc":0,"subproc":0,"timestamp":1700000010,"type":1,"v":1},"v":1}',NULL,3647494393,1);
INSERT INTO "journal" VALUES(17,1700000020.0,1,0,'event','{"event":{"attrs":{"ReceivedBytes":0.0,"ReturnValue":0,"RunLocalUsage":"Usr 0 00:00:00, Sys 0 00:00:00","RunRemoteUsage":"Usr 0 00:00:00, Sys 0 00:00:00","SentBytes":0.0,"TerminatedNormally":true,"TotalLocalUsage":"Usr 0 00:00:00, Sys 0 00:00:00","TotalReceivedBytes":0.0,"TotalRemoteUsage":"Usr 0 00:00:00, Sys 0 00:00:00","TotalSentBytes":0.0},"cluster":1,"proc":0,"subproc":0,"timestamp":1700000020,"type":5,"v":1},"v":1}',NULL,2150422347,5);
INSERT INTO "journal" VALUES(18,1700000020.0,1,0,'leave','{"v":1}',NULL,2808722852,NULL);
INSERT INTO "journal" VALUES(19,1700000020.0,2,1,'set','{"delete":[],"set":{"JobPrio":"5"},"v":1}',NULL,761312844,NULL);
CREATE TABLE log_failures (
    path     TEXT PRIMARY KEY,
    position INTEGER NOT NULL,            -- last position written before the failure
    error    TEXT NOT NULL
);
CREATE TABLE log_files (
    path     TEXT PRIMARY KEY,
    position INTEGER NOT NULL,            -- last journal position written to it
    offset   INTEGER NOT NULL,            -- its size after that write
    sequence INTEGER NOT NULL DEFAULT 0,  -- event log: rotation sequence
    ctime    INTEGER NOT NULL DEFAULT 0   -- event log: creation time in its header
);
CREATE TABLE log_jobs (
    cluster INTEGER NOT NULL,
    proc    INTEGER NOT NULL,             -- -1: cluster ad
    path    TEXT NOT NULL,
    format  TEXT NOT NULL DEFAULT 'text',
    PRIMARY KEY (cluster, proc)
) WITHOUT ROWID;
CREATE TABLE meta (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
INSERT INTO "meta" VALUES('schema','1');
CREATE TABLE projection (
    name     TEXT PRIMARY KEY,
    position INTEGER NOT NULL,
    checksum INTEGER NOT NULL
);
INSERT INTO "projection" VALUES('queue',19,761312844);
CREATE TABLE queue_clusters (
    cluster INTEGER PRIMARY KEY,
    ad      TEXT NOT NULL                 -- attribute -> ClassAd expression text (daemons/adrow.py)
);
INSERT INTO "queue_clusters" VALUES(1,'ClusterId1Cmd"/bin/true"Owner"user1"QDate1700000001UserLog"/nonexistent-v1/1.log"');
INSERT INTO "queue_clusters" VALUES(2,'ClusterId2Cmd"/bin/true"Owner"user2"QDate1700000002UserLog"/nonexistent-v1/2.log"');
INSERT INTO "queue_clusters" VALUES(3,'ClusterId3Cmd"/bin/true"Owner"user3"QDate1700000003UserLog"/nonexistent-v1/3.log"');
CREATE TABLE queue_jobs (
    cluster INTEGER NOT NULL,
    proc    INTEGER NOT NULL,
    status  INTEGER NOT NULL,
    owner   TEXT COLLATE NOCASE,          -- ClassAd == on strings ignores case
    ad      TEXT NOT NULL,                -- the proc's own attributes (daemons/adrow.py)
    PRIMARY KEY (cluster, proc)
) WITHOUT ROWID;
INSERT INTO "queue_jobs" VALUES(1,1,1,'user1','Args"run 1"ClusterId1JobStatus1ProcId1');
INSERT INTO "queue_jobs" VALUES(2,0,1,'user2','Args"run 0"ClusterId2JobStatus1ProcId0');
INSERT INTO "queue_jobs" VALUES(2,1,1,'user2','Args"run 1"ClusterId2JobPrio5JobStatus1ProcId1');
INSERT INTO "queue_jobs" VALUES(3,0,1,'user3','Args"run 0"ClusterId3JobStatus1ProcId0');
INSERT INTO "queue_jobs" VALUES(3,1,1,'user3','Args"run 1"ClusterId3JobStatus1ProcId1');
CREATE UNIQUE INDEX journal_key ON journal(key) WHERE key IS NOT NULL;
CREATE INDEX queue_jobs_status ON queue_jobs(status);
CREATE INDEX queue_jobs_owner ON queue_jobs(owner);
CREATE INDEX history_job ON history(cluster, proc);
COMMIT;
