"""A job's argument that is not UTF-8 (Python's surrogateescape text, which the submit
writes as a ClassAd octal escape) reaches the job as its bytes, as HTCondor's ClassAd
strings carry bytes; it used to fail at every try to start the job, which stayed idle."""

from __future__ import annotations

import jobledger as htcondor
from jobledger.tracking.jobeventlog import JobEventLog
from tests.pool.conftest import wait_until


def test_an_argument_that_is_not_utf8_reaches_the_job_as_its_bytes(pool, tmp_path):
    script = tmp_path / "job.sh"
    script.write_text('#!/bin/sh\nprintf "%s" "$1" > arg.out\n')
    script.chmod(0o755)
    log = tmp_path / "job.log"
    for transfer in ("NO", "YES"):
        (tmp_path / "arg.out").unlink(missing_ok=True)
        cluster = pool.schedd.submit(htcondor.Submit({
            "executable": str(script), "arguments": "caf\udce9", "initialdir": str(tmp_path),
            "log": str(log), "should_transfer_files": transfer}), count=1).cluster()
        wait_until(lambda: any(e.cluster == cluster and e.type == htcondor.JobEventType.JOB_TERMINATED
                               for e in JobEventLog(str(log)).events(0)), 60, what="the job's end")
        assert (tmp_path / "arg.out").read_bytes() == b"caf\xe9", transfer
        ended = [e for e in JobEventLog(str(log)).events(0) if e.cluster == cluster]
        assert [e.type for e in ended][-1] == htcondor.JobEventType.JOB_TERMINATED
        assert ended[-1]["ReturnValue"] == 0
