"""The JOB_QUEUE_LOG fold's records for an entry that changes a proc in place are made
from what the entry changes (``changed_lines``), not by comparing whole ads: they must
be the records the comparison (``ad_lines``) gives, in the same order, and a random
stream of entries must give the lines of a plain fold compared ad by ad, whatever the
batches and however often the fold hands its procs back."""

from __future__ import annotations

import random
from functools import partial

import pytest
from hypothesis import given, settings, strategies as st

from jobledger.daemons.queuelog_writer import JobQueueLogWriter
from jobledger.daemons.storage.store import Store
from jobledger.eventcore.events import event_to_dict, make_event
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.journal import Entry
from jobledger.eventcore.projections import queuelog_live
from jobledger.eventcore.projections.queue import QueueFold
from jobledger.eventcore.projections.queuelog_live import (
    HEADER_KEY, PackedProcs, QueueLogFold, ad_lines, changed_lines,
)
from jobledger.eventcore.records import (
    ClusterAd, EventRecord, LeaveQueue, ProcAd, ProcBlock, SetAttributes, UserRecord,
)
from jobledger.eventcore.status import JobStatus, next_status
from jobledger.eventcore.errors import InvalidTransition

NAMES = st.sampled_from(["A", "B", "C", "D", "E", "F", "G", "H"])
VALUES = st.sampled_from(["1", "2", '"x"', '"a\nb"', '"c\rd"', ""])


@settings(max_examples=400)
@given(st.dictionaries(NAMES, VALUES), st.dictionaries(NAMES, VALUES), st.lists(NAMES, max_size=4))
def test_changed_lines_are_the_comparison_s(ad, sets, deletes):
    after = dict(ad)
    after.update(sets)
    for name in deletes:
        after.pop(name, None)
    assert changed_lines("1.0", dict(ad), sets, deletes) == ad_lines("1.0", ad, after)


def _stream(seed: int) -> list[Entry]:
    """Clusters, procs, attribute changes (new, changed, unchanged, deleted) and status
    events in an order the status table allows, jobs leaving once done."""
    rng = random.Random(seed)
    steps, status, next_cluster = [], {}, 1
    names = ["A", "B", "C", "D", "JobPrio", "Note"]
    for _ in range(160):
        roll = rng.random()
        if roll < 0.08 or not status:
            cluster = next_cluster
            next_cluster += 1
            steps.append((JobId(cluster, -1), "cluster", {"ad": {"Cmd": '"/bin/true"', "Owner": '"u"'}}))
            for proc in range(rng.randint(1, 4)):
                own = {rng.choice(names): str(rng.randint(0, 3)) for _ in range(rng.randint(0, 3))}
                steps.append((JobId(cluster, proc), "proc", {"ad": dict(sorted(own.items()))}))
                steps.append((JobId(cluster, proc), "event", {"event": {"type": 0, "timestamp": 5}}))
                status[(cluster, proc)] = JobStatus.IDLE
            continue
        key = rng.choice(sorted(status))
        job = JobId(*key)
        if roll < 0.45:
            sets = {rng.choice(names): str(rng.randint(0, 3)) for _ in range(rng.randint(0, 4))}
            deletes = rng.sample(names, rng.randint(0, 2))
            steps.append((job, "set", {"set": dict(sorted(sets.items())), "delete": deletes}))
        elif status[key] in (JobStatus.COMPLETED, JobStatus.REMOVED):
            steps.append((job, "leave", {}))
            del status[key]
        else:
            number = rng.choice([1, 1, 4, 5, 5, 9, 10, 11, 12, 13])
            try:
                status[key] = next_status(status[key], number, job)
            except InvalidTransition:
                continue
            event = {"type": number, "timestamp": 10 + len(steps), "attrs": {"ReturnValue": 0}}
            steps.append((job, "event", {"event": event}))
        if rng.random() < 0.05 and any(c == key[0] for c, _ in status):
            steps.append((JobId(key[0], -1), "set", {"set": {"Note": str(len(steps))}, "delete": []}))
    return [Entry(n, 0.0, job, kind, payload) for n, (job, kind, payload) in enumerate(steps, 1)]


def _compared(entries: list[Entry]) -> list[str]:
    """The lines of each entry from a plain fold, its ads compared before and after."""
    fold, lines, next_cluster = QueueFold(), [], 1
    for entry in entries:
        procs = {k: None if v is None else dict(v.ad) for k, v in fold.procs.items()}
        clusters = dict(fold.clusters)
        fold.apply(entry.position, entry.time, entry.job, entry.type, entry.payload)
        changes = fold.take_changes()
        for cluster in sorted(changes.clusters):
            if cluster >= next_cluster:
                next_cluster = cluster + 1
                lines.append(f"103 {HEADER_KEY} NextClusterNum {next_cluster}")
            lines += ad_lines(f"0{cluster}.-1", clusters.get(cluster), fold.clusters.get(cluster))
        for key in sorted(changes.procs):
            row = fold.procs.get(key)
            lines += ad_lines(f"{key[0]}.{key[1]}", procs.get(key), None if row is None else row.ad)
    return lines


@pytest.mark.parametrize("seed", range(12))
def test_a_random_stream_gives_the_lines_of_ads_compared(monkeypatch, seed):
    entries = _stream(seed)
    expected = _compared(entries)
    monkeypatch.setattr(queuelog_live, "SETTLE_EVERY", 1 + seed % 5)
    fold, rng, lines = QueueLogFold(PackedProcs()), random.Random(seed), []
    while entries:
        size = rng.randint(1, 9)
        lines += fold.apply(entries[:size])
        entries = entries[size:]
    assert lines == expected


def _records():
    """Records whose dicts are not in sorted order, as a schedd builds them."""
    T = 1_700_000_000
    submit = event_to_dict(make_event(0, cluster=7, proc=0, timestamp=T))
    out = [UserRecord("user", "u@h", "add", {"Owner": '"u"', "Enabled": "true", "MaxJobs": "5"}),
           ClusterAd(7, {"Owner": '"u"', "Cmd": '"/bin/true"', "Arguments": '"a"', "Iwd": '"/"'}),
           ProcBlock(7, (0, 1, 2), ({"Zed": "1", "Mid": "2"}, {}, {"Alpha": "3"}), submit,
                     {"JobStatus": "1", "EnteredCurrentStatus": str(T), "GlobalJobId": '"g"'}),
           ProcAd(JobId(7, 3), {"Zed": "1", "JobStatus": "1", "Beta": "2"}),
           EventRecord(JobId(7, 3), {**submit, "proc": 3})]
    for proc in range(4):
        job = JobId(7, proc)
        out += [SetAttributes(job, {"StarterPid": "9", "ClaimId": '"c"', "Zed": "4", "Beta": "2"}, ["Mid"]),
                EventRecord(job, event_to_dict(make_event(1, cluster=7, proc=proc, timestamp=T + 1)))]
    out += [EventRecord(JobId(7, 3), event_to_dict(make_event(12, cluster=7, proc=3, timestamp=T + 2,
                                                              attrs={"HoldReason": "why", "HoldReasonCode": 1})))]
    for proc in range(3):
        out += [SetAttributes(JobId(7, proc), {"RemoteWallClockTime": "1.0", "ExitCode": "0"}, ["ClaimId", "StarterPid"]),
                EventRecord(JobId(7, proc), event_to_dict(make_event(5, cluster=7, proc=proc, timestamp=T + 3,
                                                                     attrs={"ReturnValue": 0, "TerminatedNormally": True}))),
                LeaveQueue(JobId(7, proc))]
    out += [SetAttributes(JobId(7, -1), {"Note": '"n"', "Arguments": '"b"'}, ["Iwd"]),
            UserRecord("user", "u@h", "edit", {"MaxJobs": "6", "Disabled": "false"}, ("Enabled",))]
    return out


def test_the_writer_writes_the_same_from_the_store_s_memory_and_from_the_journal(tmp_path):
    logs = {}
    for mode in ("memory", "journal"):
        store = Store(tmp_path / mode / "pool", durability="normal")
        store.keep_recent("queuelog")
        writer = JobQueueLogWriter(store.path, tmp_path / mode / "job_queue.log", fsync=False,
                                   recent=partial(store.recent, follower="queuelog") if mode == "memory" else None)
        writer.open()
        reads = []
        original = writer._reader.rows_spanning
        writer._reader.rows_spanning = lambda *args: reads.append(args) or original(*args)
        for record in _records():
            store.append([record])
            writer.catch_up()
        assert writer.position == store.head()
        assert (reads == []) == (mode == "memory")
        writer.close()
        store.close()
        logs[mode] = (tmp_path / mode / "job_queue.log").read_text().split("\n", 1)[1]
    assert logs["memory"] == logs["journal"]
    assert "103 7.0 ClaimId" in logs["memory"] and "104 7.3 Mid" not in logs["memory"]
