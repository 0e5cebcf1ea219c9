"""Who may talk to a pool, what may be changed, where a job's files go."""

from __future__ import annotations

import os
import stat

import pytest

import jobledger as htcondor
from jobledger.daemons import ipc
from tests.pool.conftest import wait_until

NOBODY = 65534


def _as_other_user(fn) -> int:
    """Run ``fn`` in a child process as another uid; its exit status."""
    pid = os.fork()
    if pid == 0:
        code = 99
        try:
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            code = fn()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def test_local_dir_is_private(pool):
    for sub in ("", "run", "spool", "execute", "log"):
        mode = stat.S_IMODE(os.stat(pool.local_dir / sub).st_mode)
        assert mode == 0o700, (sub, oct(mode))
    assert stat.S_IMODE(os.stat(pool.local_dir / "run" / "schedd.sock").st_mode) == 0o600


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to become another user")
def test_another_user_cannot_connect(pool):
    address = ipc.sinful(str(pool.local_dir / "run" / "schedd.sock"))

    def attempt() -> int:
        try:
            ipc.call(address, "query", timeout=5)
        except htcondor.HTCondorException:
            return 0      # refused, as it must be
        return 1          # got an answer: a hole
    assert _as_other_user(attempt) == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to become another user")
def test_peer_uid_check_refuses_even_a_reachable_socket(tmp_path):
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    os.chmod(tmp_path, 0o755)
    os.chmod(open_dir, 0o777)
    server = ipc.Server(str(open_dir / "s.sock"), {"ping": lambda peer: "pong"}).start()
    os.chmod(open_dir / "s.sock", 0o777)
    try:
        assert ipc.call(server.address, "ping") == "pong"

        def attempt() -> int:
            try:
                ipc.call(server.address, "ping", timeout=5)
            except htcondor.HTCondorException:
                return 0
            return 1
        assert _as_other_user(attempt) == 0
    finally:
        server.close()


def test_job_files_land_in_its_own_directories(pool, tmp_path):
    mine = tmp_path / "job"
    mine.mkdir()
    sub = htcondor.Submit({"executable": "/bin/sh", "initialdir": str(mine),
                           "arguments": "\"-c 'echo out; echo err >&2; pwd; touch made_here; "
                                        "echo $_CONDOR_SCRATCH_DIR'\"",
                           "output": "job.out", "error": "job.err"})
    cluster = pool.schedd.submit(sub).cluster()
    wait_until(lambda: pool.schedd.history(f"ClusterId == {cluster}", ["ExitCode"]),
               what="the job to finish")
    out = (mine / "job.out").read_text().splitlines()
    assert out[0] == "out" and out[1] == str(mine)
    scratch = out[2]
    assert scratch.startswith(str(pool.local_dir / "execute" / "dir_"))
    assert (mine / "job.err").read_text() == "err\n"
    assert sorted(p.name for p in mine.iterdir()) == ["job.err", "job.out", "made_here"]
    # The scratch directory was the job's alone and is gone once its outcome is recorded.
    wait_until(lambda: not os.path.exists(scratch), 10, what="the scratch directory to go")


def test_run_bookkeeping_cannot_be_redirected(pool, tmp_path):
    sub = htcondor.Submit({"executable": "/bin/sleep", "arguments": "60", "hold": "true"})
    cluster = pool.schedd.submit(sub).cluster()
    for attr in ("ScratchDir", "StarterPid", "ClaimId", "Owner", "User"):
        with pytest.raises(htcondor.HTCondorException):
            pool.schedd.edit(f"{cluster}.0", attr, f'"{tmp_path}"')
    # Submitting the bookkeeping attributes does not plant them either.
    raw = htcondor.classad.ClassAd({"Cmd": "/bin/true", "ScratchDir": str(tmp_path), "Owner": "root2",
                                    "JobStatus": 5, "HoldReasonCode": 15})
    raw_cluster = pool.schedd.submit(raw)
    ad = pool.schedd.query(f"ClusterId == {raw_cluster}", ["ScratchDir", "Owner"])[0]
    assert "ScratchDir" not in ad and ad["Owner"] != "root2"
    pool.schedd.act(htcondor.JobAction.Remove, f"ClusterId == {cluster} || ClusterId == {raw_cluster}")
