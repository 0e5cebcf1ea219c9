"""Job epochs against a real pool: ``Schedd.jobEpochHistory`` and ``condor_history -epochs``
give one record per run attempt, as HTCondor's JOB_EPOCH_HISTORY holds them
(RunInstanceID from 0, EpochAdType "EPOCH", EpochWriteDate), newest first."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import jobledger as htcondor
import jobledger.v1 as v1
from tests.pool.conftest import wait_until


@pytest.fixture(scope="module")
def twice(pool, tmp_path_factory):
    """A job whose first run is requeued by its exit policy and whose second completes."""
    folder = tmp_path_factory.mktemp("epochs")
    cluster = pool.schedd.submit(htcondor.Submit({
        "executable": "/bin/true", "initialdir": str(folder), "log": str(folder / "job.log"),
        "on_exit_remove": "NumJobStarts >= 2"})).cluster()
    wait_until(lambda: pool.schedd.history(f"ClusterId == {cluster}", ["JobStatus"]), 120,
               what="the job to run twice and leave")
    return cluster


def test_one_record_per_run_newest_first(pool, twice):
    records = pool.schedd.jobEpochHistory(f"ClusterId == {twice}")
    assert [ad["RunInstanceID"] for ad in records] == [1, 0]
    for ad in records:
        assert ad["EpochAdType"] == "EPOCH" and (ad["ClusterId"], ad["ProcId"]) == (twice, 0)
        assert isinstance(ad["EpochWriteDate"], int) and ad["Owner"]
    last, first = records
    assert first["JobStatus"] == 1 and first["NumJobStarts"] == 1     # requeued: idle again
    assert last["JobStatus"] == 4 and last["NumJobStarts"] == 2 and last["ExitCode"] == 0
    assert first["EpochWriteDate"] <= last["EpochWriteDate"]


def test_query_arguments(pool, twice):
    schedd = pool.schedd
    only = schedd.jobEpochHistory(f"ClusterId == {twice}", ["RunInstanceID", "ClusterId"], match=1)
    assert len(only) == 1 and set(only[0].keys()) == {"RunInstanceID", "ClusterId"}
    assert only[0]["RunInstanceID"] == 1
    assert [ad["RunInstanceID"] for ad in schedd.jobEpochHistory(
        f"ClusterId == {twice} && RunInstanceID == 0", ["RunInstanceID"])] == [0]
    assert schedd.jobEpochHistory(f"ClusterId == {twice}", ad_type="input,output") == []
    assert len(schedd.jobEpochHistory(f"ClusterId == {twice}", ad_type=["epoch"])) == 2
    # since: stop (exclusive) at the first record the expression is true of, newest first
    assert schedd.jobEpochHistory(f"ClusterId == {twice}", since="RunInstanceID == 1") == []
    with pytest.raises(TypeError):
        schedd.jobEpochHistory(ad_type=3)
    with pytest.raises(htcondor.HTCondorException):
        schedd.jobEpochHistory("RunInstanceID == ")
    iterator = v1.Schedd().jobEpochHistory(f"ClusterId == {twice}", ["RunInstanceID"])
    assert isinstance(iterator, htcondor.HistoryIterator)
    assert [ad["RunInstanceID"] for ad in iterator] == [1, 0]


def _history(pool, *args) -> str:
    done = subprocess.run([str(Path(sys.executable).parent / "condor_history"), *args],
                          env=dict(os.environ, CONDOR_CONFIG=str(pool.config_file)),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


def test_condor_history_epochs(pool, twice):
    out = _history(pool, "-epochs", str(twice), "-af", "ClusterId", "ProcId", "RunInstanceID", "EpochAdType")
    assert out.splitlines() == [f"{twice} 0 1 EPOCH", f"{twice} 0 0 EPOCH"]
    lines = _history(pool, "-epochs", str(twice)).splitlines()
    assert lines[0].split()[:2] == ["ID", "OWNER"] and len(lines) == 3
    assert all(line.split()[0] == f"{twice}.0" for line in lines[1:])
    assert _history(pool, "-epochs", str(twice), "-limit", "1", "-af", "RunInstanceID").split() == ["1"]


def test_a_read_only_store_gives_the_same_records(pool, twice):
    """What condor_history -epochs reads from a stopped pool's journal."""
    from jobledger.daemons.schedd.epochs import epoch_records
    from jobledger.daemons.storage.store import Store
    store = Store(pool.local_dir, readonly=True)
    try:
        records = epoch_records(store, f"ClusterId == {twice}", ["RunInstanceID"])
    finally:
        store.close()
    assert records == [{"RunInstanceID": "1"}, {"RunInstanceID": "0"}]
