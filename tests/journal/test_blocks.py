"""Blocks of procs (``procs`` records): one journal row for a submission's procs and
their SUBMIT events, read everywhere as the two-row form it stands for.

Each scenario is written twice, once as a proc ad + SUBMIT event per proc and
once with those pairs as blocks, and every reader must see the same journal:
entries at the same positions, the same queue, replay at any position, user
logs and the global event log byte for byte, a clean audit, the tracker.
"""

from __future__ import annotations

import datetime
import json
import sqlite3

import pytest

from jobledger.daemons.audit import audit
from jobledger.daemons.projector import Projector
from jobledger.daemons.storage.store import Store
from jobledger.eventcore.codecs.journal import expand_block, make_rows, record_to_payload, verify_rows
from jobledger.eventcore.errors import InvalidTransition, JournalCorrupt
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.journal import MemoryJournal, row_entries
from jobledger.eventcore.projections.queue import fold_entries
from jobledger.eventcore.records import ProcAd, ProcBlock, SetAttributes
from tests.journal.helpers import all_ads, as_blocks, event, life, submit
from tests.journal.schema_check import check_payload, check_row
from jobledger.tracking.journal import JournalTracker

UTC = datetime.timezone.utc


def with_proc_ids(records):
    """Proc ads carrying their ProcId, as the schedd writes them."""
    return [ProcAd(r.job, dict(r.ad, ProcId=str(r.job.proc))) if isinstance(r, ProcAd) else r
            for r in records]


def scenario(log=None):
    """Batches of records: two submissions (one held), some lives, a third submission."""
    return [
        with_proc_ids(submit(1, 7, log=log)),
        life(JobId(1, 0)) + [event(JobId(1, 3), 1)],
        with_proc_ids(submit(2, 5, held=True, owner="bob", log=log)),
        [event(JobId(2, 1), 13), event(JobId(1, 3), 12)] + life(JobId(1, 5)),
        with_proc_ids(submit(3, 1, log=log)),
    ]


def shape(entries):
    return [(e.position, e.job, e.type, e.payload) for e in entries]


def test_blocks_are_read_as_the_records_they_stand_for():
    rows, blocks = MemoryJournal(), MemoryJournal()
    for t, batch in enumerate(scenario(), 1):
        rows.append(batch, time=float(t))
        blocks.append(as_blocks(batch, size=3), time=float(t))
    assert any(r.type == "procs" for r in blocks.rows())
    assert len(blocks.rows()) < len(rows.rows()) and blocks.head() == rows.head()
    assert shape(blocks.entries()) == shape(rows.entries())
    head = rows.head()
    for after in range(head + 1):     # any position, inside a block or not
        for limit in (1, 2, 5, None):
            assert shape(blocks.entries(after, limit)) == shape(rows.entries(after, limit))
    for position in range(head + 1):  # replay: the queue as it stood there
        a = fold_entries(e for e in rows.entries() if e.position <= position)
        b = fold_entries(e for e in blocks.entries() if e.position <= position)
        assert (a.procs, a.clusters) == (b.procs, b.clusters)
    assert verify_rows(blocks.rows()) == []
    for row in blocks.rows():
        check_row(row)


def test_the_payload_keeps_what_procs_share_once_and_validates():
    block = as_blocks(with_proc_ids(submit(4, 3)))[1]
    payload = record_to_payload(block)
    check_payload("procs", payload)
    assert payload["procs"] == [0, 1, 2] and payload["common"] == {"JobStatus": "1"}
    assert payload["ads"] == [{"Args": '"0"'}, {"Args": '"1"'}, {"Args": '"2"'}]
    assert "proc" not in payload["submit"]
    [row] = make_rows([block], 10, 1.0, 0)
    assert row.position == 15 and (row.cluster, row.proc, row.event) == (4, 0, None)
    # positions 10..15: proc 0 at 10 and its SUBMIT at 11, proc 1 at 12, ...
    assert [(at, proc, kind) for at, proc, kind, _ in expand_block(payload, 15, after=11)] == [
        (12, 1, "proc"), (13, 1, "event"), (14, 2, "proc"), (15, 2, "event")]
    assert [at for at, *_ in expand_block(payload, 15, after=12)] == [13, 14, 15]


def test_a_block_must_be_well_formed():
    template = event(JobId(1, 0), 0).event
    with pytest.raises(ValueError, match="one ad per proc"):
        ProcBlock(1, [0, 1], [{}], template)
    with pytest.raises(ValueError, match="ProcId from its procs"):
        ProcBlock(1, [1], [{"ProcId": "1"}], template)
    with pytest.raises(ValueError, match="newline"):
        ProcBlock(1, [0], [{"A": "1\n2"}], template)
    with pytest.raises(ValueError, match="newline"):
        ProcBlock(1, [0], [{}], template, {"A": "1\n2"})
    with pytest.raises(ValueError, match="SUBMIT"):
        ProcBlock(1, [0], [{}], event(JobId(1, 0), 1).event)
    block = ProcBlock.factored(1, [3, 4], [{"A": "1", "B": "2", "ProcId": "3"}, {"A": "1"}], template)
    assert (block.common, block.ads) == ({"A": "1"}, ({"B": "2"}, {}))
    assert [block.ad_of(i) for i in (0, 1)] == [{"A": "1", "B": "2", "ProcId": "3"},
                                                {"A": "1", "ProcId": "4"}]
    journal = MemoryJournal()
    journal.append(with_proc_ids(submit(1, 1)), time=1.0)
    fold = fold_entries(journal.entries())
    again = as_blocks(with_proc_ids(submit(1, 2)))[1]
    with pytest.raises(InvalidTransition):      # proc 1.0 is already in the queue
        fold.apply(9, 2.0, again.job, "procs", record_to_payload(again))


def test_continuity_and_checksums_cover_blocks():
    journal = MemoryJournal()
    journal.append(as_blocks(with_proc_ids(submit(1, 4))), time=1.0)
    journal.append(life(JobId(1, 0)), time=2.0)
    rows = journal.rows()
    assert [r.position for r in rows] == [1, 9, 10, 11, 12]
    assert verify_rows(rows[:1] + rows[2:])[0] == (10, "position gap: expected 2, found 10")
    bad = rows[1]._replace(payload=rows[1].payload.replace('"procs":[0,1,2,3]', '"procs":[0,1,2]'))
    findings = verify_rows([rows[0], bad] + rows[2:])
    assert (9, "position gap: expected 7, found 9") in findings
    assert any("checksum mismatch" in text for _, text in findings)
    broken = rows[1]._replace(payload='{"v":1}')
    assert any("unreadable block" in text for _, text in verify_rows([rows[0], broken]))
    with pytest.raises(JournalCorrupt):
        row_entries(broken)


def run_pool(tmp_path, name, blocks: bool, stream: bool):
    """A store + projector (user log and global event log) fed the scenario."""
    local = tmp_path / name
    log, evlog = str(tmp_path / f"{name}.log"), str(tmp_path / f"{name}.EventLog")
    store = Store(local, constraint_filter=all_ads)
    projector = Projector(store, event_log=evlog, tz=UTC, chunk=5)   # reads split blocks
    for batch in scenario(log):
        batch = as_blocks(batch, size=3) if blocks else batch
        if stream and batch and batch[0].type == "cluster":
            store.append_stream([batch[:1], batch[1:3], batch[3:]], time=5.0)
        else:
            store.append(batch, time=5.0)
        projector.catch_up()
    projector.close()
    return store, log, evlog


@pytest.mark.parametrize("stream", [False, True])
def test_store_logs_audit_and_restart_read_blocks_as_rows(tmp_path, stream):
    plain, log_a, evlog_a = run_pool(tmp_path, "rows", blocks=False, stream=stream)
    block, log_b, evlog_b = run_pool(tmp_path, "blocks", blocks=True, stream=stream)
    try:
        assert block.head() == plain.head()
        named = lambda store: [(at, job, kind, json.dumps(payload, sort_keys=True)
                                .replace(str(tmp_path), "").replace("blocks.", "rows."))
                               for at, job, kind, payload in shape(store.entries())]
        assert named(block) == named(plain)
        assert open(log_b, "rb").read() == open(log_a, "rb").read().replace(b"rows.log", b"blocks.log")
        strip = lambda text: text.split(b"\n", 1)[1]          # the header names its own file
        assert strip(open(evlog_b, "rb").read()) == strip(open(evlog_a, "rb").read())
        queue = "SELECT cluster, proc, status, owner, ad FROM queue_jobs ORDER BY cluster, proc"
        assert block._read(queue) == plain._read(queue)
        report = audit(block.local_dir, tz=UTC)
        assert report.ok, report.findings
    finally:
        plain.close()
        block.close()
    again = Store(tmp_path / "blocks", constraint_filter=all_ads)
    try:
        assert again.recovered == "current"
        before = again._read(queue)
        again.rebuild_queue()
        assert again._read(queue) == before
    finally:
        again.close()


def test_a_damaged_block_is_an_audit_finding(tmp_path):
    block, _, _ = run_pool(tmp_path, "blocks", blocks=True, stream=False)
    block.close()
    conn = sqlite3.connect(tmp_path / "blocks" / "journal.sqlite")
    position, payload = conn.execute(
        "SELECT position, payload FROM journal WHERE type='procs' ORDER BY position").fetchone()
    data = json.loads(payload)
    data["ads"][0]["Args"] = '"changed"'
    conn.execute("UPDATE journal SET payload=? WHERE position=?",
                 (json.dumps(data, sort_keys=True, separators=(",", ":")), position))
    conn.commit()
    conn.close()
    findings = audit(tmp_path / "blocks", tz=UTC).findings
    assert any(f.kind == "checksum" and f.position == position for f in findings)


def test_the_journal_tracker_reads_blocks(tmp_path):
    plain, _, _ = run_pool(tmp_path, "rows", blocks=False, stream=False)
    block, _, _ = run_pool(tmp_path, "blocks", blocks=True, stream=False)
    head = block.head()
    plain.close()
    block.close()
    states = []
    for store in ("rows", "blocks"):      # 4 rows a read: blocks and rows split differently
        with JournalTracker(tmp_path / store / "journal.sqlite", notify=False, batch=4) as tracker:
            while tracker.position < head:
                tracker.step()
            states.append({job: (s.status, s.submitted) for job, s in tracker.snapshot().items()})
    assert states[0] == states[1] and len(states[0]) == 13


def logless_scenario(tmp_path):
    """Submissions whose logs come from the cluster ad, from some procs' own ads, from
    an edit after the submit, or from nowhere; then the jobs' lives."""
    cluster_log, proc_log, edited = (str(tmp_path / name) for name in ("c.log", "p.log", "e.log"))
    procs_with_log = with_proc_ids(submit(2, 6))
    for i, record in enumerate(procs_with_log):
        if isinstance(record, ProcAd) and record.job.proc % 3 == 1:
            procs_with_log[i] = ProcAd(record.job, dict(record.ad, UserLog=json.dumps(proc_log)))
    return [
        with_proc_ids(submit(1, 7)),                     # no log anywhere
        procs_with_log,
        with_proc_ids(submit(3, 4, log=cluster_log)),
        [SetAttributes(JobId(1, 2), set={"UserLog": json.dumps(edited)})],
        life(JobId(1, 0)) + life(JobId(1, 2)) + life(JobId(2, 1)) + life(JobId(2, 2)) + life(JobId(3, 3)),
    ], (cluster_log, proc_log, edited)


@pytest.mark.parametrize("blocks", [False, True])
def test_a_block_without_logs_is_passed_over_and_the_logs_are_the_same(tmp_path, blocks):
    """A projector without an event log skips blocks whose procs have no log unexpanded
    (LogTargets.silent_block); what it writes is what it writes from the two-row form."""
    outputs = {}
    for form in ("rows", "blocks" if blocks else "rows-again"):
        where = tmp_path / form
        where.mkdir()
        batches, logs = logless_scenario(where)
        store = Store(where / "pool", constraint_filter=all_ads)
        projector = Projector(store, tz=UTC, chunk=5)
        try:
            for batch in batches:
                store.append(as_blocks(batch, size=3) if form == "blocks" else batch, time=5.0)
                projector.catch_up()
            assert projector.position == store.head()
        finally:
            projector.close()
            store.close()
        outputs[form] = [open(log, "rb").read().replace(str(where).encode(), b"") for log in logs]
    first, second = outputs.values()
    assert first == second
    cluster_log, proc_log, edited = first
    assert cluster_log.count(b"\n...\n") == 4 + 2     # 4 SUBMIT, job 3.3's execute and terminate
    assert proc_log.count(b"\n...\n") == 2 + 2        # procs 2.1 and 2.4 submitted, 2.1 ran
    assert edited.count(b"\n...\n") == 2              # 1.2's life after the edit


def test_silent_block_names_blocks_nothing_of_which_is_logged():
    from jobledger.eventcore.projections.userlog import LogTargets, Target
    targets = LogTargets({(5, -1): Target("/l", "text")})
    quiet = {"common": {"Cmd": '"/bin/true"'}, "ads": [{"Args": '"1"'}, {}]}
    assert targets.silent_block(1, quiet)
    assert not targets.silent_block(5, quiet)                      # its cluster has a log
    for attr in ("UserLog", "UserLogUseXML", "DAGManNodesLog"):
        assert not targets.silent_block(1, dict(quiet, common={attr: '"x"'}))
        assert not targets.silent_block(1, dict(quiet, ads=[{}, {attr: '"x"'}]))
    assert not LogTargets({(1, -2): Target("/n", "dagman")}).silent_block(1, quiet)   # a nodes log
