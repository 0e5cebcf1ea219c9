"""User logs and the global event log: exactly once across simulated crashes."""

from __future__ import annotations

import datetime
import os
import time

import pytest

from jobledger.daemons.projector import Projector
from jobledger.daemons.storage.store import Store
from jobledger.daemons.userlog_files import header_sequence, reconcile
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.projections.userlog import HEADER_WIDTH, render, render_header, rotation_names

from tests.journal.helpers import all_ads, event, life, submit

UTC = datetime.timezone.utc


@pytest.fixture
def pool(tmp_path):
    store = Store(tmp_path / "local", constraint_filter=all_ads)
    yield tmp_path, store
    store.close()


def expected_text(store, path):
    """What a user log must hold: the rendering of its jobs' events, in journal order."""
    out = []
    for e in store.entries():
        if e.type == "event" and not e.payload.get("imported"):
            out.append((e.job, render(e.payload["event"], tz=UTC)))
    return out


def test_user_log_gets_each_event_once(pool):
    tmp, store = pool
    log = str(tmp / "a.log")
    store.append(submit(1, 2, log=log))
    store.append(life(JobId(1, 0)))
    p = Projector(store, tz=UTC)
    assert p.catch_up() == store.head()
    want = "".join(t for _, t in expected_text(store, log))
    assert open(log).read() == want
    assert p.catch_up() == store.head()
    assert open(log).read() == want
    store.append([event(JobId(1, 1), 1)])
    p.wait_for_position(store.head(), 5)
    assert open(log).read() == want + render(list(store.entries())[-1].payload["event"], tz=UTC)
    p.close()


def test_jobs_without_user_log_write_nothing(pool):
    tmp, store = pool
    store.append(submit(1, 1))
    p = Projector(store, tz=UTC)
    p.catch_up()
    assert store._read("SELECT count(*) FROM log_files")[0][0] == 0
    p.close()


@pytest.mark.parametrize("tail", ["whole_next", "torn_next", "garbage", "whole_and_torn"])
def test_restart_reconciles_the_tail(pool, tail):
    tmp, store = pool
    log = str(tmp / "a.log")
    store.append(submit(1, 1, log=log))
    p = Projector(store, tz=UTC)
    p.catch_up()
    saved = p.cursors.load_state(log)
    store.append(life(JobId(1, 0))[:2])
    texts = [render(e.payload["event"], tz=UTC).encode() for e in store.entries(after=saved.position)]
    # the writer wrote some bytes, then died before saving its state
    extra = {"whole_next": texts[0], "torn_next": texts[0][:17],
             "garbage": b"hello\n", "whole_and_torn": texts[0] + texts[1][:-3]}[tail]
    with open(log, "ab") as f:
        f.write(extra)
    p.close()
    p = Projector(store, tz=UTC)
    p.catch_up()
    want = "".join(t for _, t in expected_text(store, log))
    if tail == "garbage":       # not ours (a user log has many writers): kept where it was
        want = want[:saved.offset] + "hello\n" + want[saved.offset:]
    assert open(log).read() == want
    assert p.cursors.load_state(log).offset == len(want.encode())
    p.close()


def test_reconcile_counts_matches(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"AAA\nBBB\nCC")
    assert reconcile(str(path), 4, [b"BBB\n", b"CCC\n"]) == (8, 1)
    assert path.read_bytes() == b"AAA\nBBB\n"
    assert reconcile(str(tmp_path / "missing"), 0, [b"x"]) == (0, 0)


def test_reconcile_never_cuts_what_another_writer_appended(tmp_path):
    """Our events found among another writer's, in order, each once; the other's bytes
    kept, a fragment that ends the file kept too unless it is the start of our next."""
    path = tmp_path / "f"
    path.write_bytes(b"OLD\nours1\ntheirs1\nours2\ntheirs2\n")
    assert reconcile(str(path), 4, [b"ours1\n", b"ours2\n", b"ours3\n"]) == (path.stat().st_size, 2)
    assert path.read_bytes() == b"OLD\nours1\ntheirs1\nours2\ntheirs2\n"
    path.write_bytes(b"OLD\ntheirs1\nou")            # our torn write after theirs: cut
    assert reconcile(str(path), 4, [b"ours1\n"]) == (12, 0)
    assert path.read_bytes() == b"OLD\ntheirs1\n"
    path.write_bytes(b"OLD\ntheirs-unfinished")      # theirs, no newline yet: kept
    assert reconcile(str(path), 4, [b"ours1\n"]) == (21, 0)
    assert path.read_bytes() == b"OLD\ntheirs-unfinished"
    path.write_bytes(b"OLD\nxours1\n")               # ours only at a line start
    assert reconcile(str(path), 4, [b"ours1\n"]) == (11, 0)


FOREIGN = ("000 ({cluster}.000.000) 2024-01-01 00:00:00 Job submitted from host: <10.0.0.1:9618>\n"
           "    DAG Node: FAKE{i}\n...\n")


def test_another_writer_shares_the_user_log(pool):
    """DAGMan's nodes log is written by the projector and by others (DAGMan, the user):
    what they append stays, between our events, and ours are each written once, across a
    restart in the crash window too."""
    tmp, store = pool
    log = str(tmp / "nodes.log")
    store.append(submit(1, 2, log=log))
    p = Projector(store, tz=UTC)
    p.catch_up()
    theirs = [FOREIGN.format(cluster=900000 + i, i=i) for i in range(3)]
    with open(log, "a") as f:
        f.write(theirs[0])
    store.append(life(JobId(1, 0))[:1])
    p.catch_up()
    with open(log, "a") as f:
        f.write(theirs[1])
    # the crash window: our next two events written, then theirs, then we die unsaved
    saved = p.cursors.load_state(log)
    store.append(life(JobId(1, 0))[1:] + [event(JobId(1, 1), 1)])
    texts = [render(e.payload["event"], tz=UTC) for e in store.entries(after=saved.position)
             if e.type == "event"]
    with open(log, "a") as f:
        f.write(texts[0] + theirs[2] + texts[1][:9])     # the second one torn
    p.close()
    p = Projector(store, tz=UTC)
    p.catch_up()
    data = open(log).read()
    for text in theirs:
        assert data.count(text) == 1
    ours = data
    for text in theirs:
        ours = ours.replace(text, "")
    assert ours == "".join(t for _, t in expected_text(store, log))
    assert data.index(theirs[2]) < data.index(texts[1])
    assert p.cursors.load_state(log).offset == len(data.encode())
    store.append([event(JobId(1, 1), 5)])
    p.catch_up()
    assert open(log).read().startswith(data)
    p.close()


def test_event_log_header_and_rotation(pool):
    tmp, store = pool
    evlog = str(tmp / "EventLog")
    store.append(submit(1, 4))
    p = Projector(store, event_log=evlog, max_event_log=600, tz=UTC)
    p.catch_up()
    for proc in range(4):
        store.append(life(JobId(1, proc)))
        p.catch_up()
    assert os.path.exists(evlog + ".old")
    first_line = open(evlog).readline()
    assert "Global JobLog:" in first_line and len(first_line) == len("008 (-01.-01.-01) ") + 15 + HEADER_WIDTH + 1
    seq = header_sequence(evlog)
    assert seq > 1 and header_sequence(evlog + ".old") == seq - 1
    old = open(evlog + ".old").read()
    assert f"size={os.path.getsize(evlog + '.old')} " in old.splitlines()[0]
    p.close()


def test_event_log_numbered_rotations(pool):
    tmp, store = pool
    evlog = str(tmp / "EventLog")
    store.append(submit(1, 6))
    p = Projector(store, event_log=evlog, max_event_log=300, event_log_rotations=3, tz=UTC)
    for proc in range(6):
        store.append(life(JobId(1, proc)))
        p.catch_up()
    names = sorted(n for n in os.listdir(tmp) if n.startswith("EventLog"))
    assert names == ["EventLog", "EventLog.1", "EventLog.2", "EventLog.3"]
    seqs = [header_sequence(str(tmp / n)) for n in ["EventLog", "EventLog.1", "EventLog.2", "EventLog.3"]]
    assert seqs == sorted(seqs, reverse=True) and seqs[0] - seqs[3] == 3
    p.close()


def test_rotation_names():
    assert rotation_names("/x/E", 1) == [("/x/E", "/x/E.old")]
    assert rotation_names("/x/E", 3) == [("/x/E.2", "/x/E.3"), ("/x/E.1", "/x/E.2"), ("/x/E", "/x/E.1")]


def test_interrupted_rotation_is_finished_on_restart(pool):
    tmp, store = pool
    evlog = str(tmp / "EventLog")
    store.append(submit(1, 2))
    p = Projector(store, event_log=evlog, max_event_log=10**9, tz=UTC)
    p.catch_up()
    state = p.cursors.load_state(evlog)
    # crash right after saving the rotation intent, before the rename
    p._save_now(state._replace(sequence=state.sequence + 1, offset=0, ctime=5))
    before = open(evlog).read()
    p.close()
    store.append(life(JobId(1, 0)))
    p = Projector(store, event_log=evlog, max_event_log=10**9, tz=UTC)
    p.catch_up()
    assert open(evlog + ".old").read().splitlines()[2:] == before.splitlines()[2:]
    live = open(evlog).read()
    assert live.startswith(render_header(5, state.sequence + 1, tz=UTC)[:40])
    assert live.count("Global JobLog") == 1 and "Job terminated." in live
    p.close()


def test_audit_of_a_pool_and_of_hand_edited_logs(pool):
    from jobledger.daemons.audit import audit
    tmp, store = pool
    log, evlog = str(tmp / "a.log"), str(tmp / "EventLog")
    store.append(submit(1, 2, log=log))
    store.append(life(JobId(1, 0)) + [event(JobId(1, 1), 1)])
    p = Projector(store, event_log=evlog, tz=UTC)
    p.catch_up()
    report = audit(store.local_dir, tz=UTC)
    assert report.ok, report.findings
    # a crash window: the next event is already in the file, its state not saved yet
    store.append([event(JobId(1, 1), 12)])
    text = render(list(store.entries())[-1].payload["event"], tz=UTC).encode()
    with open(log, "ab") as f:
        f.write(text)
    report = audit(store.local_dir, tz=UTC)
    assert report.ok and any("crash window" in n for n in report.notes)
    p.catch_up()
    assert audit(store.local_dir, tz=UTC).ok
    data = open(log, "rb").read()
    at = data.index(b"Job executing")
    open(log, "wb").write(data[:at] + b"Job Executing" + data[at + 13:])
    report = audit(store.local_dir, tz=UTC)
    [finding] = report.findings
    executes = [e for e in store.entries() if e.type == "event" and e.payload["event"]["type"] == 1]
    assert (finding.kind, finding.path, finding.offset, finding.position, finding.job) == (
        "userlog", log, at + 4, executes[0].position, "1.0")
    open(log, "wb").write(data)
    ev = open(evlog, "rb").read()
    at = ev.index(b"Job terminated.")
    open(evlog, "wb").write(ev[:at] + b"Job Terminated." + ev[at + 15:])
    [finding] = audit(store.local_dir, tz=UTC).findings
    assert finding.kind == "eventlog" and finding.path == evlog
    assert finding.offset <= at < finding.offset + 600
    p.close()


# What HTCondor's DAGMan and condor_chirp write to a nodes log beside the schedd's events:
# a NOOP node's submit (cluster 0), a PRE_SKIP (030), a POST script's end (016) and a
# generic event (008) of one of our jobs.
OTHERS = [
    "000 (000.-01.001) 2024-01-01 00:00:00 Job submitted from host: <dummy-submit-for-noop-job>\n"
    "    DAG Node: NOOP1\n...\n",
    "030 (000.-01.002) 2024-01-01 00:00:01 PRE script return value is PRE_SKIP value\n"
    "    DAG Node: SKIPPED\n...\n",
    "016 (001.000.000) 2024-01-01 00:00:02 POST Script terminated.\n"
    "\t(1) Normal termination (return value 0)\n    DAG Node: A\n...\n",
    "008 (001.001.000) 2024-01-01 00:00:03 progress 50%\n...\n",
]


def test_audit_of_a_log_shared_with_other_writers(pool):
    """Other writers' events between ours and after them are notes, not findings; a foreign
    event other writers never write (a SUBMIT of a real cluster) past our last event is
    evidence, as before."""
    from jobledger.daemons.audit import audit
    tmp, store = pool
    log = str(tmp / "nodes.log")
    store.append(submit(1, 2, log=log))
    p = Projector(store, tz=UTC)
    p.catch_up()
    with open(log, "a") as f:
        f.write(OTHERS[0] + OTHERS[1])
    store.append(life(JobId(1, 0)))
    p.catch_up()
    with open(log, "a") as f:
        f.write(OTHERS[2] + OTHERS[3])
    report = audit(store.local_dir, tz=UTC)
    assert report.ok, report.findings
    assert any("bytes among our events are other writers'" in n for n in report.notes)
    assert any("or other writers' events" in n for n in report.notes)
    # ours still checked: an edit of our event among theirs is found where it is
    data = open(log, "rb").read()
    at = data.index(b"Job executing")
    open(log, "wb").write(data[:at] + b"Job Executing" + data[at + 13:])
    [finding] = audit(store.local_dir, tz=UTC).findings
    assert (finding.kind, finding.offset) == ("userlog", at + 4)
    open(log, "wb").write(data)
    lost = FOREIGN.format(cluster=7, i=0)       # what a journal that lost cluster 7 leaves
    with open(log, "a") as f:
        f.write(lost)
    findings = audit(store.local_dir, tz=UTC).findings    # also: a cluster past the journal's
    assert {f.kind for f in findings} == {"evidence"}
    assert [f.offset for f in findings if f.path == log] == [len(data)]
    open(log, "wb").write(data + b"not an event\n")
    [finding] = audit(store.local_dir, tz=UTC).findings
    assert (finding.kind, finding.offset) == ("evidence", len(data))
    p.close()


def test_audit_of_a_log_another_writer_emptied(pool):
    """DAGMan empties its nodes log when a DAG runs again: the earlier run's events are gone
    from the file, the projector writes on at its new end, and the audit says so in a note;
    an event of ours missing after the first one kept is still a finding."""
    from jobledger.daemons.audit import audit
    tmp, store = pool
    log = str(tmp / "nodes.log")
    store.append(submit(1, 1, log=log))
    store.append(life(JobId(1, 0)))
    p = Projector(store, tz=UTC)
    p.catch_up()
    open(log, "wb").close()                     # the new run starts its nodes log empty
    store.append(submit(2, 1, log=log))
    store.append(life(JobId(2, 0)))
    p.catch_up()
    report = audit(store.local_dir, tz=UTC)
    assert report.ok, report.findings
    gone = len([e for e in store.entries() if e.type == "event" and e.job.cluster == 1])
    assert any(f"its first {gone} events are gone" in n for n in report.notes)
    data = open(log, "rb").read()
    at = data.index(b"Job executing")
    end = data.index(b"...\n", at) + 4
    open(log, "wb").write(data[:_event_start(data, at)] + data[end:])
    [finding] = audit(store.local_dir, tz=UTC).findings
    assert finding.kind == "userlog" and finding.job == "2.0"
    p.close()


def _event_start(data: bytes, at: int) -> int:
    """Where the event holding byte ``at`` begins (after the previous event's "...")."""
    return data.rindex(b"...\n", 0, at) + 4


@pytest.mark.parametrize("flag,fmt", [("true", "xml"), ("2", "json")])
def test_xml_and_json_user_logs(pool, flag, fmt):
    from jobledger.eventcore.codecs.userlog import read_events
    from jobledger.eventcore.events import event_to_dict
    from jobledger.eventcore.records import ClusterAd
    tmp, store = pool
    log = str(tmp / f"a.{fmt}")
    records = submit(1, 2, log=log)
    records[0] = ClusterAd(1, {**records[0].ad, "UserLogUseXML": flag})
    store.append(records)
    store.append(life(JobId(1, 0)))
    p = Projector(store, tz=UTC)
    p.catch_up()
    data = open(log, "rb").read()
    assert data.lstrip()[:1] == (b"<" if fmt == "xml" else b"{")
    want = [e.payload["event"] for e in store.entries() if e.type == "event"]
    got = [event_to_dict(e) for e in read_events(data)]
    assert [(g["type"], g["cluster"], g["proc"], g["timestamp"]) for g in got] == [
        (w["type"], w["cluster"], w["proc"], w["timestamp"]) for w in want]
    # a torn record after a crash is cut and written again, exactly once
    store.append([event(JobId(1, 1), 1)])
    nxt = render(list(store.entries())[-1].payload["event"], tz=UTC, log_format=fmt).encode()
    with open(log, "ab") as f:
        f.write(nxt[: len(nxt) // 2])
    p.close()
    p = Projector(store, tz=UTC)
    p.catch_up()
    assert open(log, "rb").read() == data + nxt
    from jobledger.daemons.audit import audit
    assert audit(store.local_dir, tz=UTC).ok
    p.close()


def test_audit_compares_queue_and_history_tables(pool):
    from jobledger.daemons.audit import audit
    tmp, store = pool
    store.append(submit(1, 3))
    store.append(life(JobId(1, 0)) + [event(JobId(1, 1), 1)])
    assert audit(store.local_dir, tz=UTC).ok
    from jobledger.daemons.storage.adrow import decode_ad, encode_ad
    (position, text), = store._read("SELECT position, ad FROM history")
    ad = decode_ad(text)
    ad["ExitCode"] = "9"
    store._conn.execute("UPDATE history SET ad = ? WHERE position = ?", (encode_ad(ad), position))
    store._conn.execute("UPDATE queue_jobs SET status = 5 WHERE proc = 1")
    kinds = sorted((f.kind, f.job) for f in audit(store.local_dir, tz=UTC).findings)
    assert kinds == [("history", "1.0"), ("queue", "1.1")]


def test_event_log_reads_back_with_the_reader(pool):
    from jobledger.eventcore.codecs.userlog import TextReaderState, read_events
    tmp, store = pool
    evlog = str(tmp / "EventLog")
    store.append(submit(1, 2))
    store.append(life(JobId(1, 0)))
    p = Projector(store, event_log=evlog, tz=UTC)
    p.catch_up()
    events = read_events(open(evlog, "rb").read(), TextReaderState(year=2023))
    header, rest = events[0], events[1:]
    assert header.type == 8 and header.cluster == -1
    assert header.attributes()["Info"].startswith("Global JobLog: ctime=")
    assert [(e.type, e.cluster, e.proc) for e in rest] == [
        (0, 1, 0), (0, 1, 1), (1, 1, 0), (5, 1, 0)]
    assert [e.timestamp for e in rest][:2] == [1_700_000_000, 1_700_000_000]
    p.close()


@pytest.mark.parametrize("rotations", [1, 3])
def test_audit_checks_rotated_event_logs(pool, rotations):
    from jobledger.daemons.audit import audit
    tmp, store = pool
    evlog = str(tmp / "EventLog")
    store.append(submit(1, 6))
    p = Projector(store, event_log=evlog, max_event_log=400, event_log_rotations=rotations, tz=UTC)
    for proc in range(6):
        store.append(life(JobId(1, proc)))
        p.catch_up()
    assert audit(store.local_dir, tz=UTC).ok
    old = evlog + (".old" if rotations == 1 else ".2")
    data = open(old, "rb").read()
    at = data.index(b"Job executing")
    open(old, "wb").write(data[:at] + b"Job eXecuting" + data[at + 13:])
    [finding] = audit(store.local_dir, tz=UTC).findings
    assert (finding.kind, finding.path) == ("eventlog", old) and finding.offset <= at
    p.close()


def test_audit_reports_an_illegal_transition_with_position_and_job(pool):
    """A row written behind the store's back (valid checksum) that the status table refuses."""
    from jobledger.daemons.audit import audit
    from jobledger.eventcore.codecs.journal import make_rows
    tmp, store = pool
    store.append(submit(1, 2))
    head, checksum = store._read_head()
    [row] = make_rows([event(JobId(1, 1), 5)], head + 1, 1.0, checksum)   # idle -> terminated
    store._conn.execute("INSERT INTO journal VALUES (?,?,?,?,?,?,?,?,?)", row)
    report = audit(store.local_dir, tz=UTC)
    transitions = [f for f in report.findings if f.kind == "transition"]
    assert [(f.position, f.job) for f in transitions] == [(head + 1, "1.1")]
    assert "not allowed in status" in transitions[0].message


def test_projector_thread_follows_and_stop_reraises(pool):
    tmp, store = pool
    log = str(tmp / "a.log")
    store.append(submit(1, 1, log=log))
    p = Projector(store, tz=UTC)
    p.start(interval=0.01)
    position = store.append(life(JobId(1, 0))[:2])
    assert p.wait_for_position(position, timeout=10)
    assert open(log).read().count("...\n") == 3
    p.stop()
    # an event log that cannot be written: the thread ends, stop() says why
    (tmp / "EventLog").mkdir()
    q = Projector(store, event_log=str(tmp / "EventLog"), tz=UTC)
    q.start(interval=0.01)
    position = store.append([event(JobId(1, 0), 6)])
    with pytest.raises(IsADirectoryError):
        q.wait_for_position(position, timeout=10)
    with pytest.raises(IsADirectoryError):
        q.stop()
    q.stop()          # reported once: nothing left to raise
    q.close()
    p.close()


def _wait_visible(projector, position: int, timeout: float = 30) -> bool:
    """Wait until ``projector`` shows ``position`` (without asking it to hurry, as
    ``wait_for_position`` does)."""
    deadline = time.monotonic() + timeout
    while projector.visible < position:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def _hour_window_projector(pool, monkeypatch, name: str):
    """(store, a started projector whose gathering window lasts an hour, the log path),
    the log's submit event already written."""
    import jobledger.daemons.projector as projector_module
    monkeypatch.setattr(projector_module, "BATCH_WINDOW", 3600.0)
    monkeypatch.setattr(projector_module, "BATCH_WINDOW_MAX", 3600.0)
    tmp, store = pool
    log = str(tmp / name)
    p = Projector(store, tz=UTC)
    p.start(interval=0.01)
    assert _wait_visible(p, store.append(submit(1, 1, log=log)))   # then the window: an hour
    return store, p, log


def test_hurry_ends_the_gathering_window(pool, monkeypatch):
    """A DAG node's end is written within NODE_GAP of the last catch-up (Projector.hurry),
    however long the window that lets a stream of commits gather would have lasted."""
    store, p, log = _hour_window_projector(pool, monkeypatch, "nodes.log")
    for number in (1, 5):
        position = store.append([event(JobId(1, 0), number)])
        p.hurry()
        assert _wait_visible(p, position)
    assert open(log).read() == "".join(text for _, text in expected_text(store, log))
    p.stop()
    p.close()


def test_drained_ends_the_gathering_window_at_once(pool, monkeypatch):
    """The last end of a stream (the queue then holds no idle or running job: the
    schedd says ``drained``) is written at once, not when the window would end."""
    store, p, log = _hour_window_projector(pool, monkeypatch, "a.log")
    position = store.append(life(JobId(1, 0)))
    p.drained()
    assert _wait_visible(p, position)
    assert open(log).read() == "".join(text for _, text in expected_text(store, log))
    p.stop()
    p.close()


def test_the_schedd_says_drained_only_when_no_job_is_idle_or_running():
    from types import SimpleNamespace
    from jobledger.daemons.schedd.daemon import Schedd
    told = []
    for counts, drained in (({1: 3}, False), ({2: 1, 4: 7}, False), ({6: 1}, False), ({7: 1}, False),
                            ({5: 2, 3: 1, 4: 9}, True), ({}, True)):
        schedd = SimpleNamespace(store=SimpleNamespace(status_counts=lambda counts=counts: counts),
                                 projector=SimpleNamespace(drained=lambda: told.append(True)))
        Schedd._ended_last(schedd)
        assert told == ([True] if drained else []), counts
        told.clear()


def test_an_unwritable_user_log_waits_without_stopping_the_others(pool):
    from jobledger.daemons.audit import audit
    tmp, store = pool
    good, bad = str(tmp / "good.log"), tmp / "bad.log"
    store.append(submit(1, 1, log=good) + submit(2, 1, log=str(bad)))
    bad.mkdir()                                   # the path is a directory: cannot write
    p = Projector(store, tz=UTC)
    store.append(life(JobId(1, 0))[:2] + life(JobId(2, 0))[:2])
    assert p.catch_up() == store.head()
    assert open(good).read().count("...\n") == 3
    [(path, (position, error))] = p.failures().items()
    assert path == str(bad) and "Is a directory" in error
    [finding] = audit(store.local_dir, tz=UTC).findings     # a log behind is a finding
    assert (finding.kind, finding.job, finding.path) == ("userlog", "2.0", str(bad))
    assert "3 events of this job" in finding.message and "Is a directory" in finding.message
    store.append([event(JobId(2, 0), 9), event(JobId(1, 0), 9)])
    p.catch_up()                                  # still failing: still waiting
    assert p.failures() and open(good).read().count("...\n") == 4
    bad.rmdir()
    p.catch_up()                                  # fixed: written in order, once
    assert p.failures() == {}
    want = "".join(render(e.payload["event"], tz=UTC) for e in store.entries()
                   if e.type == "event" and e.job.cluster == 2)
    assert open(bad).read() == want
    assert audit(store.local_dir, tz=UTC).ok
    p.close()


def test_a_log_that_leaves_its_path_between_write_and_fsync_keeps_its_events_written(tmp_path):
    """The fsync after a write (sync=False) finds the path gone, or a symlink another
    user planted there: the events went to the file that was there, once; the write
    stands and they are not written again to whatever takes the path next."""
    from jobledger.daemons.safe_open import safe_open_fd
    from jobledger.daemons.userlog_files import FileState, UserLogWriter
    from jobledger.eventcore.errors import UnsafePathError
    writer = UserLogWriter()
    log = str(tmp_path / "job.log")
    state = writer.write(FileState(log, 0, 0), [(1, b"one\n"), (2, b"two\n")], sync=False)
    os.unlink(log)
    writer.sync(log)                       # nothing left to fsync there: not an error
    assert (state.position, state.offset) == (2, 8)
    assert writer.write(state, [(1, b"one\n"), (2, b"two\n"), (3, b"three\n")]).position == 3
    assert open(log, "rb").read() == b"three\n"
    if os.geteuid() == 0:                  # a planted symlink (another user's) is refused
        os.unlink(log)
        precious = tmp_path / "precious"
        precious.write_text("mine")
        os.chmod(tmp_path, 0o777)         # a directory others can write
        os.symlink(precious, log)
        os.lchown(log, 65534, 65534)
        with pytest.raises(UnsafePathError):
            safe_open_fd(log, "rb")
        writer.sync(log)
        assert precious.read_text() == "mine"


def test_targets_follow_the_queue_not_the_history(pool):
    """A job's log target goes when it leaves (it gets no more events), its cluster's with
    the cluster's last job, in memory and in the saved table; what is still queued stays."""
    tmp, store = pool
    log = str(tmp / "a.log")
    store.append(submit(1, 3, log=log) + submit(2, 1, log=log))
    p = Projector(store, tz=UTC)
    p.catch_up()
    assert set(p.targets().paths) == {(1, -1), (1, 0), (1, 1), (1, 2), (2, -1), (2, 0)}
    store.append(life(JobId(1, 0)) + life(JobId(1, 1)) + life(JobId(2, 0)))
    p.catch_up()
    assert set(p.targets().paths) == {(1, -1), (1, 2)} and not p.targets().gone
    assert sorted(store._read("SELECT cluster, proc FROM log_jobs")) == [(1, -1), (1, 2)]
    store.append(life(JobId(1, 2)))
    p.catch_up()
    assert not p.targets().paths and store._read("SELECT count(*) FROM log_jobs")[0][0] == 0
    assert open(log).read() == "".join(t for _, t in expected_text(store, log))
    p.close()


@pytest.mark.parametrize("restart", [False, True])
def test_a_failed_log_gets_the_events_of_jobs_that_left_meanwhile(pool, restart):
    """The target of a job that left while its log failed is kept (in memory and saved)
    until the log is written again, also across a restart of the projector."""
    tmp, store = pool
    bad = tmp / "bad.log"
    store.append(submit(1, 1, log=str(bad)))
    bad.mkdir()
    p = Projector(store, tz=UTC)
    p.catch_up()
    store.append(life(JobId(1, 0)))
    p.catch_up()
    assert p.failures() and (1, 0) not in p.targets().paths and (1, 0) in p.targets().gone
    assert sorted(store._read("SELECT cluster, proc FROM log_jobs")) == [(1, -1), (1, 0)]
    if restart:
        p.close()
        p = Projector(store, tz=UTC)
    bad.rmdir()
    p.catch_up()
    assert p.failures() == {}
    assert open(bad).read() == "".join(t for _, t in expected_text(store, str(bad)))
    if not restart:        # written: the targets of the jobs that left go
        assert not p.targets().gone and store._read("SELECT count(*) FROM log_jobs")[0][0] == 0
    p.close()
