"""The folds behind the web view's panels (no server, no browser): header counts and
series, timeline runs and their parts, holds, DAG attributes, the job drawer's story,
the Chrome trace; every cut agrees with ``jobledger replay``'s fold."""

from __future__ import annotations

import json

from jobledger.eventcore.ids import JobId
from jobledger.eventcore.journal import MemoryJournal
from jobledger.eventcore.projections.picture import Picture, picture, thin
from jobledger.eventcore.projections.replay import replay
from jobledger.eventcore.projections.story import job_story
from jobledger.eventcore.projections.trace import chrome_trace
from jobledger.eventcore.projections.userlog import render
from jobledger.eventcore.records import ActionRecord, ClusterAd, LeaveQueue, ProcAd, quote_string
from tests.journal.helpers import as_blocks, event, submit

T = 1_700_000_000
A, B = JobId(1, 0), JobId(1, 1)


def transfer(job, kind, t):
    return event(job, 40, t, Type=kind, Host="<127.0.0.1:1>")


def batches() -> list[tuple[list, float]]:
    """Two jobs: A transfers in, runs on slot1, transfers out, exits 0; B runs on slot2,
    is held (code 21) while running, released, evicted, runs again on slot1, exits 3."""
    return [
        (submit(1, 2, timestamp=T), T),
        ([transfer(A, 2, T + 5), transfer(A, 3, T + 6),
          event(A, 1, T + 6, ExecuteHost="<127.0.0.1:9>", SlotName="slot1@host"),
          event(B, 1, T + 7, ExecuteHost="<127.0.0.1:9>", SlotName="slot2@host")], T + 7),
        ([ActionRecord(B, "hold", reason="admin says wait", by="root"),
          event(B, 12, T + 8, HoldReason="admin says wait", HoldReasonCode=21)], T + 8),
        ([transfer(A, 5, T + 9), transfer(A, 6, T + 10), event(A, 5, T + 10), LeaveQueue(A)], T + 10),
        ([event(B, 13, T + 12)], T + 12),
        ([event(B, 1, T + 13, SlotName="slot1@host"), event(B, 4, T + 14),
          event(B, 1, T + 15, SlotName="slot1@host"), event(B, 5, T + 20, ReturnValue=3), LeaveQueue(B)], T + 20),
    ]


def run_journal() -> MemoryJournal:
    j = MemoryJournal()
    for records, when in batches():
        j.append(records, time=when)
    return j


def jobs_of(snapshot):
    return {row["id"]: row for row in snapshot["jobs"]}


def test_runs_parts_holds_and_outcomes():
    snap = picture(run_journal().entries()).snapshot()
    a, b = jobs_of(snap)["1.0"], jobs_of(snap)["1.1"]
    assert a["st"] == 4 and a["left"] and a["exit"] == 0 and a["sub"] == T
    [run] = a["runs"]
    assert (run["slot"], run["wait"], run["start"], run["end"], run["outcome"]) == ("slot1@host", T, T + 5, T + 10, "exit 0")
    assert run["parts"] == [["in", T + 5, T + 6], ["exec", T + 6, T + 9], ["out", T + 9, T + 10]]
    assert [(r["slot"], r["outcome"], r["wait"]) for r in b["runs"]] == [
        ("slot2@host", "held", T), ("slot1@host", "evicted", T + 12), ("slot1@host", "exit 3", T + 14)]
    assert b["holds"] == [{"t0": T + 8, "t1": T + 12, "reason": "admin says wait", "code": 21,
                           "slot": "slot2@host"}]
    assert b["exit"] == 3 and b["st"] == 4
    header = snap["header"]
    assert header["counts"]["Completed"] == 2 and header["total"] == 2
    assert header["position"] == run_journal().head() and header["start"] == T


def test_series_follows_every_change_of_the_counts():
    fold = picture(run_journal().entries())
    states = fold.header()["states"]
    seen = [dict(zip(states, p[2:])) for p in fold.series]
    assert seen[0]["Idle"] == 1 and seen[1]["Idle"] == 2
    assert {"Idle": 0, "Running": 1, "Held": 1} == {k: seen[4][k] for k in ("Idle", "Running", "Held")}
    assert seen[-1]["Completed"] == 2 and sum(seen[-1].values()) == 2
    assert [p[0] for p in fold.series] == sorted(p[0] for p in fold.series)


def test_every_cut_agrees_with_replay_and_zero_is_empty():
    journal = run_journal()
    entries = list(journal.entries())
    empty = picture(entries, position=0).snapshot()
    assert empty["jobs"] == [] and empty["series"] == [] and empty["header"]["total"] == 0
    for cut in range(1, journal.head() + 1):
        queue = replay(entries, position=cut)
        snap = jobs_of(picture(entries, position=cut).snapshot())
        for (c, p), row in queue.jobs():
            assert snap[f"{c}.{p}"]["st"] == row.status, (cut, c, p)
        gone = set(snap) - {f"{c}.{p}" for (c, p), _ in queue.jobs()}
        assert all(snap[j]["left"] and snap[j]["st"] == 4 for j in gone), cut


def test_blocks_fold_as_their_entries():
    plain, blocks = MemoryJournal(), MemoryJournal()
    records = submit(7, 30, timestamp=T)
    plain.append(records, time=T)
    blocks.append(as_blocks(records, size=8), time=T)
    assert picture(plain.entries()).snapshot() == picture(blocks.entries()).snapshot()


def test_a_follower_applying_deltas_holds_the_snapshot():
    journal = run_journal()
    entries = list(journal.entries())
    live = Picture()
    held = {}
    since = 0
    for entry in entries:
        live.apply(entry)
        if entry.position % 3 == 0 or entry.position == journal.head():
            delta = live.delta(since)
            held.update({row["id"]: row for row in delta["jobs"]})
            since = entry.position
    final = picture(entries).snapshot()
    assert held == jobs_of(final)
    # a follower resuming at any position gets exactly the jobs changed after it
    for since in range(0, journal.head() + 1, 4):
        old = jobs_of(picture(entries, position=since).snapshot())
        old.update({row["id"]: row for row in live.delta(since)["jobs"]})
        assert old == jobs_of(final)
    assert live.delta(journal.head())["jobs"] == [] and live.delta(journal.head())["series"] == []


def test_dag_nodes_and_the_dagman_job():
    j = MemoryJournal()
    j.append([ClusterAd(5, {"Owner": '"alice"', "JobUniverse": "7", "Iwd": '"/work/d"',
                            "Arguments": quote_string("-p 0 -Dag d.dag -CsdVersion x")}),
              ProcAd(JobId(5, 0), {"JobStatus": "1"}), event(JobId(5, 0), 0, T)], time=T)
    for cluster, node in ((6, "A"), (7, "B"), (8, "B")):
        j.append([ClusterAd(cluster, {"DAGNodeName": quote_string(node), "DAGManJobId": "5",
                                      "JobUniverse": "5", "Cmd": '"/bin/echo"'}),
                  ProcAd(JobId(cluster, 0), {"JobStatus": "1"}), event(JobId(cluster, 0), 0, T + cluster)],
                 time=T + cluster)
    j.append([event(JobId(6, 0), 16, T + 9, TerminatedNormally=True, ReturnValue=0, DAGNodeName="A")],
             time=T + 9)
    snap = picture(j.entries()).snapshot()
    jobs = jobs_of(snap)
    assert snap["dags"] == {"5": {"iwd": "/work/d", "dag": "d.dag"}}
    assert [(jobs[k].get("node"), jobs[k].get("dag")) for k in ("5.0", "6.0", "7.0", "8.0")] == [
        (None, None), ("A", 5), ("B", 5), ("B", 5)]
    assert jobs["6.0"]["post"] == 0 and jobs["6.0"]["cmd"] == "echo" and jobs["5.0"]["u"] == 7


def test_story_tells_events_as_the_user_log_and_the_ad_changes():
    journal = run_journal()
    entries = list(journal.entries())
    story = job_story(entries, 1, 1)
    whats = [s["what"] for s in story["steps"]]
    assert whats[:4] == ["job ad", "SUBMIT", "EXECUTE", "action hold"]
    held = story["steps"][4]
    assert held["what"] == "JOB_HELD" and held["changes"]["JobStatus"] == ["2", "5"]
    assert held["changes"]["HoldReasonCode"] == [None, "21"]
    texts = [render(e.payload["event"]) for e in entries if e.job == B and e.type == "event"]
    assert story["userlog"] == "".join(texts) and story["userlog"].startswith("000 (001.001.000)")
    assert story["left"] and story["ad"]["JobStatus"] == "4"
    at_hold = job_story(entries, 1, 1, position=held["position"])
    assert at_hold["hold_reason"] == "admin says wait" and at_hold["hold_code"] == 21
    assert job_story(entries, 1, 9) is None and job_story(entries, 1, 1, position=0) is None


def test_chrome_trace_has_a_track_per_slot_and_a_slice_per_part():
    snap = picture(run_journal().entries()).snapshot()
    trace = json.loads(json.dumps(chrome_trace(snap)))
    events = trace["traceEvents"]
    names = {(e["name"], e["args"]["name"]) for e in events if e["ph"] == "M"}
    assert {("process_name", "host"), ("thread_name", "slot1@host"), ("thread_name", "slot2@host")} <= names
    slices = [e for e in events if e["ph"] == "X"]
    a_parts = sorted((e["cat"], e["ts"], e["dur"]) for e in slices if e["args"]["job"] == "1.0")
    assert a_parts == [("exec", 6_000_000, 3_000_000), ("in", 5_000_000, 1_000_000),
                       ("out", 9_000_000, 1_000_000), ("wait", 0, 5_000_000)]
    held = [e for e in slices if e["cat"] == "held"]
    assert len(held) == 1 and held[0]["dur"] == 4_000_000 and held[0]["args"]["code"] == 21
    assert any(e["ph"] == "C" for e in events) and trace["otherData"]["jobs"] == 2


def test_thin_keeps_ends_and_bounds_the_points():
    series = [[i, float(i), i] for i in range(10_000)]
    out = thin(series, 100)
    assert len(out) <= 100 and out[0] == series[0] and out[-1] == series[-1]
    assert [p[0] for p in out] == sorted(p[0] for p in out)
    assert thin(series[:50], 100) == series[:50]
    # times that step back (a log's order) never cut off the later points
    jagged = [[i, float(i // 2 * 2 + (1 if i % 2 == 0 else 0)), i] for i in range(10_000)]
    out = thin(jagged, 100)
    assert len(out) <= 100 and out[-1] == jagged[-1] and out[-2][0] > 9_000
