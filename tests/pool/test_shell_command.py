"""The ``shell`` submit command: the job is ``/bin/sh -c TEXT`` (Cmd /bin/sh, not transferred,
Arguments ``-c 'TEXT'``), as condor_submit makes it; any arguments given are not used."""

from __future__ import annotations

import jobledger as htcondor
from tests.pool.conftest import wait_until


def test_a_shell_job_runs_its_command_line(pool, tmp_path):
    description = htcondor.Submit({
        "shell": "echo one > made.txt && echo two >> made.txt && exit 7",
        "arguments": "not used", "initialdir": str(tmp_path), "log": str(tmp_path / "job.log")})
    cluster = pool.schedd.submit(description).cluster()
    ad = wait_until(lambda: pool.schedd.history(f"ClusterId == {cluster}",
                                                ["Cmd", "Arguments", "TransferExecutable", "ExitCode"]),
                    60, what="the shell job to finish")[0]
    assert ad["Cmd"] == "/bin/sh" and ad["TransferExecutable"] is False
    assert ad["Arguments"] == "-c 'echo one > made.txt && echo two >> made.txt && exit 7'"
    assert ad["ExitCode"] == 7 and (tmp_path / "made.txt").read_text() == "one\ntwo\n"


def test_an_empty_shell_is_no_shell():
    description = htcondor.Submit({"shell": "", "executable": "/bin/true"})
    ad = next(iter(description.cluster(clusterid=1, owner="me").ads()))
    assert ad["Cmd"] == "/bin/true" and "TransferExecutable" not in ad
