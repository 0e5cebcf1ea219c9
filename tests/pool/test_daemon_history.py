"""The schedd's daemon history (SCHEDD_DAEMON_HISTORY) and ``Schedd.daemonHistory``, against a
real pool: the schedd's ad appended as it advertises, at most every
SCHEDD_HISTORY_RECORD_INTERVAL, in HTCondor's file form, read back newest first."""

from __future__ import annotations

import pytest

import jobledger as htcondor
from jobledger.classad import ExprTree
from tests.pool.conftest import running_pool, wait_until


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    yield from running_pool(tmp_path_factory, SCHEDD_HISTORY_RECORD_INTERVAL="0", UPDATE_INTERVAL="1")


def test_daemon_history_records_the_schedds_ad(recording):
    schedd = recording.schedd
    ads = wait_until(lambda: (lambda got: got if len(got) >= 3 else None)(schedd.daemonHistory()), 60,
                     what="three records of the schedd's ad")
    assert all(ad["MyType"] == "Scheduler" and isinstance(ad["RecordWriteDate"], int) for ad in ads)
    dates = [ad["RecordWriteDate"] for ad in ads]
    assert dates == sorted(dates, reverse=True)                     # newest first
    assert "TotalIdleJobs" in ads[0] and ads[0]["Name"] == schedd.location["Name"]
    assert len(schedd.daemonHistory(match=2)) == 2
    only = schedd.daemonHistory("TotalJobAds >= 0", ["RecordWriteDate"], match=1)
    assert len(only) == 1 and set(only[0].keys()) == {"RecordWriteDate"}
    oldest = dates[-1]
    newer = schedd.daemonHistory(since=ExprTree(f"RecordWriteDate <= {dates[1]}"))
    assert newer and all(ad["RecordWriteDate"] > dates[1] for ad in newer)
    assert oldest <= dates[1]
    with pytest.raises(TypeError):
        schedd.daemonHistory(since="RecordWriteDate > 0")
    text = (recording.local_dir / "spool" / "schedd_daemon_history").read_text()
    assert text.splitlines()[-1].startswith("*** SCHEDD CurrentTime=")
    assert "\nRecordWriteDate = " in text
