"""Streamed queries against a real pool: ``Schedd.xquery``'s ``QueryIterator`` (v1's
methods), ``poll`` over iterators of two schedds (``BulkQueryIterator``),
``BlockingMode``, v1's ``HistoryIterator``; the client's memory stays flat while it
iterates a queue of 20,000 jobs (bench/ has the 100,000 figure)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

import jobledger as htcondor
import jobledger.v1 as v1
from jobledger.daemons import ipc
from jobledger.daemons.query_streams import QueryIterator
from tests.pool.conftest import running_pool, wait_until

BIG = 20_000


@pytest.fixture(scope="module")
def other_pool(tmp_path_factory):
    yield from running_pool(tmp_path_factory)


def _held(schedd, tmp_path, count: int, **extra) -> int:
    description = {"executable": "/bin/true", "hold": "true", "initialdir": str(tmp_path), **extra}
    return schedd.submit(htcondor.Submit(description), count=count).cluster()


def _remove(schedd, cluster: int) -> None:
    schedd.act(htcondor.JobAction.Remove, f"ClusterId == {cluster}")


RSS_SCRIPT = r"""
import sys
import jobledger

def rss():
    return int(open("/proc/self/statm").read().split()[1]) * 4096

schedd, cluster = jobledger.Schedd(), int(sys.argv[1])
for _ in range(3):     # two passes fill the bounded caches of parsed expressions
    seen, samples, ids = 0, [], set()
    for ad in schedd.xquery(f"ClusterId == {cluster}"):
        seen += 1
        ids.add(ad["ProcId"])
        if seen % 1000 == 0:
            samples.append(rss())
print(seen, len(ids), samples[0], max(samples))
"""

HELD_AS_LIST = 12 << 10    # bytes a ClassAd of these jobs takes when kept


def test_xquery_client_memory_is_flat_in_the_queues_size(pool, tmp_path):
    """20,000 full job ads streamed: every job once, and the client's resident memory
    grows over the pass by less than 16 MiB, under a tenth of the 234 MiB that
    keeping the ads would take.

    The client's parsed-expression caches are bounded (65,536 texts) but not
    small. Each ad has two texts of its own (ProcId, GlobalJobId), 40,000 a pass,
    so the caches fill in the middle of the second pass (a 4 MiB bound over the
    second pass failed once in CI at 7.4 MiB); the third pass is measured. There
    a full LRU churns, which moves RSS by a few MiB either way as the allocator
    frees and reuses arenas: growth is measured from the pass's first sample (a
    drop is not growth) and the bound leaves room for that churn."""
    cluster = _held(pool.schedd, tmp_path, BIG)
    try:
        out = subprocess.run([sys.executable, "-c", RSS_SCRIPT, str(cluster)], capture_output=True,
                             text=True, timeout=600, env=dict(os.environ))
        assert out.returncode == 0, out.stderr
        seen, distinct, first, high = map(int, out.stdout.split())
        assert seen == distinct == BIG
        assert high - first < 16 << 20 < BIG * HELD_AS_LIST // 10, \
            f"client RSS grew by {(high - first) >> 10} KiB over {BIG} ads"
    finally:
        _remove(pool.schedd, cluster)


def test_query_over_pages_keeps_limit_and_order(pool, tmp_path):
    """More jobs than a page: ``limit`` across pages, (cluster, proc) order, no job twice."""
    cluster = _held(pool.schedd, tmp_path, 4500)
    try:
        procs = [ad["ProcId"] for ad in pool.schedd.xquery(f"ClusterId == {cluster}", ["ProcId"])]
        assert procs == list(range(4500))
        limited = list(pool.schedd.xquery(f"ClusterId == {cluster}", ["ProcId"], limit=2500))
        assert [ad["ProcId"] for ad in limited] == list(range(2500))
        odd = pool.schedd.query(f"ClusterId == {cluster} && ProcId % 2 == 1", ["ProcId"], limit=2100)
        assert [ad["ProcId"] for ad in odd] == list(range(1, 4200, 2))
    finally:
        _remove(pool.schedd, cluster)


def test_query_iterator_methods(pool, tmp_path):
    cluster = _held(pool.schedd, tmp_path, 3)
    try:
        it = pool.schedd.xquery(f"ClusterId == {cluster}", ["ProcId"])
        assert isinstance(it, htcondor.QueryIterator)
        assert it.tag() == pool.schedd.location["Name"]
        assert isinstance(it.watch(), int) and it.watch() >= 0
        got = []
        while not it.done():
            got += it.nextAdsNonBlocking()
        assert sorted(ad["ProcId"] for ad in got) == [0, 1, 2]
        assert it.watch() == -1 and it.nextAdsNonBlocking() == []
        with pytest.raises(StopIteration):
            next(it)

        tagged = pool.schedd.xquery(f"ClusterId == {cluster}", ["ProcId"], name="mine")
        assert tagged.tag() == "mine"
        first = tagged.next(htcondor.BlockingMode.Blocking)
        assert first["ProcId"] == 0
        rest = []
        while True:      # NonBlocking: None until an ad came, None once at the end, then StopIteration
            try:
                ad = tagged.next(htcondor.BlockingMode.NonBlocking)
            except StopIteration:
                break
            if ad is not None:
                rest.append(ad["ProcId"])
        assert rest == [1, 2] and tagged.done()
        assert int(htcondor.BlockingMode.NonBlocking) == 0 and int(htcondor.BlockingMode.Blocking) == 1
    finally:
        _remove(pool.schedd, cluster)


def test_poll_over_two_schedds(pool, other_pool, tmp_path):
    """``poll`` hands out whichever iterator has ads, until all are done: every job of
    both schedds comes once, each under its iterator's tag."""
    ours, theirs = _held(pool.schedd, tmp_path, 2500), _held(other_pool.schedd, tmp_path, 40)
    try:
        queries = [pool.schedd.xquery(f"ClusterId == {ours}", ["ProcId"], name="one"),
                   other_pool.schedd.xquery(f"ClusterId == {theirs}", ["ProcId"], name="two"),
                   None]
        got: dict[str, list] = {"one": [], "two": []}
        for query in htcondor.poll(queries, timeout_ms=60_000):
            assert isinstance(query, QueryIterator)
            got[query.tag()] += [ad["ProcId"] for ad in query.nextAdsNonBlocking()]
        assert sorted(got["one"]) == list(range(2500)) and sorted(got["two"]) == list(range(40))
        assert all(query.done() for query in queries[:2])
        assert isinstance(htcondor.poll([]), htcondor.BulkQueryIterator)
        assert list(htcondor.poll([])) == []
    finally:
        _remove(pool.schedd, ours)
        _remove(other_pool.schedd, theirs)


def test_poll_times_out_and_refuses_what_is_no_query(tmp_path):
    """A daemon that never answers: ``poll`` gives up after its timeout with
    HTCondorIOError (v1); anything but query iterators is an HTCondorTypeError."""
    path = str(tmp_path / "silent.sock")
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    silent.bind(path)
    silent.listen(1)
    try:
        it = QueryIterator(ipc.sinful(path), {"constraint": None}, "silent")
        assert it.nextAdsNonBlocking() == [] and it.next(htcondor.BlockingMode.NonBlocking) is None
        with pytest.raises(htcondor.HTCondorIOError):
            next(htcondor.poll([it], timeout_ms=100))
        it._close()
    finally:
        silent.close()
    with pytest.raises(htcondor.HTCondorTypeError):
        htcondor.poll(["not a query"])
    with pytest.raises(htcondor.HTCondorTypeError):
        htcondor.poll(42)


def test_xquery_reports_a_bad_constraint(pool):
    it = pool.schedd.xquery("ClusterId == ")
    with pytest.raises(htcondor.HTCondorException):
        list(it)
    assert it.done()


def test_v1_history_is_a_history_iterator(pool, tmp_path):
    schedd = v1.Schedd()
    cluster = _held(schedd, tmp_path, 3)
    _remove(schedd, cluster)
    wait_until(lambda: len(schedd.query(f"ClusterId == {cluster}")) == 0, 60, what="the jobs to leave")
    history = schedd.history(f"ClusterId == {cluster}", ["ProcId"])
    assert isinstance(history, htcondor.HistoryIterator)
    assert sorted(ad["ProcId"] for ad in history) == [0, 1, 2]
    again = schedd.history(f"ClusterId == {cluster}", ["ProcId"], match=2)
    assert len(again) == 2 and again[0]["ProcId"] in (0, 1, 2)
    assert isinstance(htcondor.Schedd().history(f"ClusterId == {cluster}"), list)
