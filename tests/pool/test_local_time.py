"""A pool whose daemons run under a zone with DST writes user logs in local time.

Each event header is the local time of the journal's instant for that event
(what HTCondor's schedd writes), the audit -- whose expectations use the
same per-instant zone -- finds the logs and the journal in agreement, and a
reader in the same zone gets the journal's instants back.  The crossing of a
DST change itself is covered with fixed instants in
tests/userlog/test_local_time.py; a live pool cannot wait for one.
"""

from __future__ import annotations

import time

import pytest

from jobledger.daemons.audit import audit
from jobledger.daemons.client.personal import PersonalPool
from jobledger.daemons.storage.store import Store
from jobledger.classad import ClassAd
from tests.conftest import local_time_zone
from tests.pool.conftest import stop_and_check, wait_until
from jobledger.tracking.jobeventlog import JobEventLog


@pytest.fixture(scope="module", params=["America/New_York", "Australia/Lord_Howe"])
def zoned_pool(request, tmp_path_factory):
    with local_time_zone(request.param):      # the daemons inherit TZ
        running = PersonalPool(local_dir=tmp_path_factory.mktemp("zoned"))
        running.start()
        yield running
        stop_and_check(running)


def journal_times(local_dir, cluster) -> list[tuple[int, int]]:
    with Store(local_dir, readonly=True) as store:   # a block of procs holds SUBMIT events too
        events = [e.payload["event"] for e in store.entries()
                  if e.job.cluster == cluster and e.type == "event"]
    return [(e["type"], int(e["timestamp"])) for e in events]


def test_user_log_times_are_local_and_audit_agrees(zoned_pool, tmp_path):
    log = tmp_path / "job.log"
    job = ClassAd({"Cmd": "/bin/true", "Iwd": str(tmp_path), "UserLog": str(log)})
    cluster = zoned_pool.schedd.submit(job, 2)
    wait_until(lambda: log.exists() and log.read_text().count("\n005 (") == 2, 60,
               what="both jobs' terminated events")
    text = log.read_text()
    wanted = journal_times(zoned_pool.local_dir, cluster)
    headers = [line.split(") ", 1)[1][:19] for line in text.splitlines()
               if line[:3].isdigit() and line[3:5] == " ("]
    assert headers == [time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) for _, t in wanted]
    assert [(int(e.type), e.timestamp) for e in JobEventLog(str(log)).events(0)] == wanted
    report = audit(zoned_pool.local_dir)
    assert report.ok, report.findings
