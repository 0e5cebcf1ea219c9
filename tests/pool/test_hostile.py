"""Hostile input and hostile neighbours against a real pool (issue 11 items 6, 7, 10, 11, 13).

"Another user" is ``nobody``: the tests run as root and chown what that user
would have planted.  Each test waits for states or events, never for time.
"""

from __future__ import annotations

import os
import signal
import threading

import pytest

import jobledger as htcondor
from jobledger.daemons.client.personal import PersonalPool
from tests.pool.conftest import stop_and_check, wait_until

NOBODY = 65534
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to chown to another user")


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    local_dir = tmp_path_factory.mktemp("hostile")
    running = PersonalPool(local_dir=local_dir, config={"PERIODIC_EXPR_INTERVAL": "1",
                                                        "SCHEDD_QUERY_TIMEOUT": "4"})
    running.start()
    yield running
    stop_and_check(running)


def status(schedd, cluster: int) -> list:
    return [ad.get("JobStatus") for ad in schedd.query(f"ClusterId == {cluster}", ["JobStatus"])]


def submit(schedd, text: str) -> int:
    return schedd.submit(htcondor.Submit(text)).cluster()


# -- item 6: the schedd's own MAX_JOBS_PER_SUBMISSION -------------------------------------------
def test_the_schedd_refuses_more_jobs_than_max_jobs_per_submission(pool):
    schedd = pool.schedd
    before = len(schedd.query("true", ["ProcId"]))
    with pytest.raises(htcondor.HTCondorException, match=r"MAX_JOBS_PER_SUBMISSION \(20000\)"):
        schedd.submit(htcondor.classad.ClassAd({"Cmd": "/bin/true", "JobStatus": 5}), count=20001)
    with pytest.raises(ValueError, match="MAX_JOBS_PER_SUBMISSION"):
        schedd.submit(htcondor.Submit("executable = /bin/true\nhold = true\nqueue 20001\n"))
    assert len(schedd.query("true", ["ProcId"])) == before      # nothing half-committed


def test_a_raised_max_jobs_per_submission_is_the_clients_limit_too(tmp_path):
    """The client checks a submit against the limit of the schedd it located, not the default."""
    raised = PersonalPool(local_dir=tmp_path / "pool", config={"MAX_JOBS_PER_SUBMISSION": "20003"})
    raised.start()
    try:
        schedd = raised.schedd
        assert schedd.location["MaxJobsPerSubmission"] == 20003
        held = "executable = /bin/true\nhold = true\nqueue {}\n"
        cluster = schedd.submit(htcondor.Submit(held.format(20002))).cluster()
        assert len(schedd.query(f"ClusterId == {cluster}", ["ProcId"])) == 20002
        with pytest.raises(ValueError, match=r"MAX_JOBS_PER_SUBMISSION \(20003\)"):
            schedd.submit(htcondor.Submit(held.format(20004)))
    finally:
        stop_and_check(raised)


# -- item 7: a catastrophic regexp in a query is bounded and stalls no one ----------------------
def test_a_catastrophic_regexp_query_is_bounded_and_others_go_on(pool):
    schedd = pool.schedd
    cluster = submit(schedd, "executable = /bin/true\nhold = true\nqueue 20\n")
    evil = f'regexp("^(a|a)*$", "{"a" * 40}b") || regexp("(x+x+)+y", "{"x" * 4000}")'
    outcome = {}

    def slow():
        try:
            outcome["ads"] = schedd.query(f"ClusterId == {cluster} && ({evil})", ["ProcId"])
        except htcondor.HTCondorException as exc:
            outcome["error"] = str(exc)
    worker = threading.Thread(target=slow)
    worker.start()
    try:
        # meanwhile another client queries and submits
        assert status(schedd, cluster) == [5] * 20
        other = submit(schedd, "executable = /bin/true\nhold = true\nqueue\n")
        assert status(schedd, other) == [5]
        stalled = worker.is_alive()
    finally:
        worker.join(60)
    assert not worker.is_alive()
    assert stalled, "the costly query ended before the others could show they were not blocked"
    # each regexp gives up (ERROR, so no job matches) or the query runs out of its budget
    assert outcome.get("ads") == [] or "budget" in outcome.get("error", ""), outcome


def test_regexp_bound_behaviour():
    from jobledger.eventcore.classad import ExprTree
    assert ExprTree('regexp("(a+)+$", "aaaa")').eval() is True
    assert ExprTree(f'regexp("(a+)+$", "{"a" * 30}!")').eval() is False    # regex cuts it short
    bounded = ExprTree(f'regexp("^(a|a)*$", "{"a" * 40}b")').eval()
    assert bounded is htcondor.classad.Value.Error                       # PCRE2's match limit: ERROR


# -- item 13: one attribute however it is spelled ------------------------------------------------
@pytest.mark.parametrize("line", ['MY.owner = "nobody"', '+OWNER = "nobody"', '+JOBSTATUS = 5',
                                  '+STARTERPID = 7', 'My.ClusterId = 9', '+ProcId = 3'])
def test_protected_attributes_by_another_spelling(pool, line):
    schedd = pool.schedd
    cluster = submit(schedd, f"executable = /bin/true\nhold = true\n{line}\nqueue\n")
    ad = schedd.query(f"ClusterId == {cluster}")[0]
    names = [name.lower() for name in ad.keys()]
    assert len(names) == len(set(names)), sorted(ad.keys())
    assert ad["Owner"] != "nobody" and ad["ClusterId"] == cluster and ad["ProcId"] == 0
    assert ad["JobStatus"] == 5 and "StarterPid" not in ad


def test_job_status_of_a_new_job_gives_condor_submits_error(pool):
    with pytest.raises(htcondor.HTCondorException, match=r"Failed to set JobStatus=4 for job \d+\.0"):
        submit(pool.schedd, "executable = /bin/true\n+JobStatus = 4\nqueue\n")


def test_raw_classad_submit_folds_spellings(pool):
    schedd = pool.schedd
    ad = htcondor.classad.ClassAd({"Cmd": "/bin/true", "OWNER": "nobody", "jobstatus": 5, "Foo": 1})
    cluster = schedd.submit(ad)
    got = schedd.query(f"ClusterId == {cluster}")[0]
    names = [name.lower() for name in got.keys()]
    assert len(names) == len(set(names)) and got["Owner"] != "nobody" and got["JobStatus"] == 5


def test_edit_normalises_the_name_before_the_protection_check(pool):
    schedd = pool.schedd
    cluster = submit(schedd, "executable = /bin/true\nhold = true\nrequest_memory = 5\nqueue\n")
    job = f"{cluster}.0"
    for attr in ("My.Owner", "MY.JobStatus", "OWNER", "my.clusterid", "StarterPID"):
        with pytest.raises(htcondor.HTCondorException, match="may not be changed"):
            schedd.edit(job, attr, '"x"')
    with pytest.raises(htcondor.HTCondorException, match="only MY. may prefix"):
        schedd.edit(job, "TARGET.Foo", "1")
    schedd.edit(job, "my.requestmemory", "7")
    ad = schedd.query(f"ClusterId == {cluster}")[0]
    assert [k for k in ad.keys() if k.lower() == "requestmemory"] == ["RequestMemory"]
    assert ad["RequestMemory"] == 7


# -- item 10: values no job can use; a job that cannot start is held -----------------------------
@pytest.mark.parametrize("attr", ["Arguments", "Environment", "In"])
def test_an_edit_putting_a_nul_byte_in_is_refused(pool, attr):
    schedd = pool.schedd
    cluster = submit(schedd, "executable = /bin/true\nhold = true\nqueue\n")
    with pytest.raises(htcondor.HTCondorException, match="NUL"):
        schedd.edit(f"{cluster}.0", attr, '"a\x00b"')
    with pytest.raises(htcondor.HTCondorException, match="NUL"):
        schedd.submit(htcondor.classad.ClassAd({"Cmd": "/bin/true", attr: "a\x00b"}))


def kill_session(sid: int) -> None:
    """SIGKILL every process of the session ``sid`` (a starter and its job)."""
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if entry.isdigit() and int(fields[3]) == sid:
            try:
                os.kill(int(entry), signal.SIGKILL)
            except ProcessLookupError:          # it ended since its /proc entry was read
                pass


def test_a_job_whose_starter_keeps_dying_is_held(pool, tmp_path):
    schedd = pool.schedd
    cluster = submit(schedd, f"executable = /bin/sleep\narguments = 300\nlog = {tmp_path}/j.log\nqueue\n")
    killed = set()
    for _ in range(3):
        pid = wait_until(lambda: next((ad.get("StarterPid") for ad in schedd.query(
            f"ClusterId == {cluster}", ["JobStatus", "StarterPid"])
            if ad.get("JobStatus") == 2 and ad.get("StarterPid") not in killed), None),
            60, what="the job to run under a new starter")
        killed.add(pid)
        kill_session(pid)
    wait_until(lambda: status(schedd, cluster) == [5], 60, what="the hold after repeated failures")
    ad = schedd.query(f"ClusterId == {cluster}", ["HoldReason", "HoldReasonCode", "NumShadowExceptions"])[0]
    assert ad["HoldReasonCode"] == 6 and "failed 3 times" in ad["HoldReason"]
    assert ad["NumShadowExceptions"] == 3


# -- item 11: symlinks planted by another user in a directory others can write -------------------
def plant(directory, name: str, target) -> str:
    """As ``nobody``: a symlink ``directory/name`` -> ``target``."""
    path = os.path.join(directory, name)
    if os.path.lexists(path):
        os.unlink(path)
    os.symlink(target, path)
    os.lchown(path, NOBODY, NOBODY)
    return path


@pytest.fixture
def shared(tmp_path):
    directory = tmp_path / "shared"
    directory.mkdir(mode=0o777)
    os.chmod(directory, 0o777)
    precious = tmp_path / "precious.txt"
    precious.write_text("the owner's data\n")
    return directory, precious


@needs_root
def test_a_planted_output_symlink_holds_the_job(pool, shared):
    directory, precious = shared
    plant(directory, "out.txt", precious)
    cluster = submit(pool.schedd, f"executable = /bin/echo\narguments = overwritten\n"
                                  f"output = {directory}/out.txt\nqueue\n")
    wait_until(lambda: status(pool.schedd, cluster) == [5], 60, what="the hold")
    reason = pool.schedd.query(f"ClusterId == {cluster}", ["HoldReason"])[0]["HoldReason"]
    assert "symlink owned by uid 65534" in reason and "out.txt" in reason
    assert precious.read_text() == "the owner's data\n"


@needs_root
def test_a_planted_user_log_symlink_is_refused_at_submit_and_never_followed(pool, shared):
    directory, precious = shared
    log = plant(directory, "job.log", precious)
    with pytest.raises(ValueError, match="Invalid log file.*symlink owned by uid 65534"):
        submit(pool.schedd, f"executable = /bin/true\nlog = {log}\nqueue\n")


@needs_root
def test_a_user_log_symlink_planted_after_submit_holds_the_job(pool, shared):
    """Planted after the submit: not followed, not written, and the job is held
    (HTCondor's hold code 22, UnableToInitUserLog) until its owner sees to it."""
    directory, precious = shared
    log = os.path.join(directory, "job.log")
    cluster = submit(pool.schedd, f"executable = /bin/sleep\narguments = 300\nhold = true\n"
                                  f"log = {log}\nqueue\n")
    # The planting takes the file with the SUBMIT event: wait until the projector wrote it
    # (a submit's reply does not wait for the user log).
    wait_until(lambda: os.path.exists(log) and any(
        e.type == htcondor.JobEventType.SUBMIT for e in htcondor.JobEventLog(log).events(0)),
        60, what="the SUBMIT event in the user log")
    plant(directory, "job.log", precious)
    pool.schedd.act(htcondor.JobAction.Release, f"ClusterId == {cluster}")
    wait_until(lambda: pool.schedd.query(f"ClusterId == {cluster} && HoldReasonCode == 22"), 60,
               what="the hold for the user log")
    ad = pool.schedd.query(f"ClusterId == {cluster}", ["JobStatus", "HoldReason", "HoldReasonSubCode"])[0]
    assert ad["JobStatus"] == 5 and ad["HoldReasonSubCode"] == 0
    assert ad["HoldReason"].startswith(f"Failed to initialize user log to {log}: ")
    assert "symlink owned by uid 65534" in ad["HoldReason"]
    assert precious.read_text() == "the owner's data\n" and os.path.islink(log)
    # Once the symlink is gone (the planting took the file with the SUBMIT event), the
    # events that waited are written, in order, once.  The job may have started before
    # its hold (the negotiator is quick), so EXECUTE (and IMAGE_SIZE) may be among them.
    os.unlink(log)
    pool.schedd.act(htcondor.JobAction.Remove, f"ClusterId == {cluster}")
    wait_until(lambda: not status(pool.schedd, cluster), 60, what="the job to leave the queue")
    kinds = [event.type for event in htcondor.JobEventLog(log).events(0)]
    T = htcondor.JobEventType
    assert [k for k in kinds if k not in (T.EXECUTE, T.IMAGE_SIZE)] == \
        [T.JOB_RELEASED, T.JOB_HELD, T.JOB_ABORTED], kinds
    assert precious.read_text() == "the owner's data\n"


@needs_root
def test_a_file_another_user_owns_in_a_shared_directory_is_not_used(shared):
    from jobledger.daemons.safe_open import safe_open
    from jobledger.eventcore.errors import UnsafePathError
    directory, precious = shared
    theirs = directory / "theirs.txt"
    theirs.write_text("")
    os.chown(theirs, NOBODY, NOBODY)
    with pytest.raises(UnsafePathError, match="owned by uid 65534"):
        safe_open(str(theirs), "wb")
    os.link(precious, directory / "hard.txt")
    with pytest.raises(UnsafePathError, match="hard links"):
        safe_open(str(directory / "hard.txt"), "wb")
    assert precious.read_text() == "the owner's data\n"
    with safe_open(str(directory / "mine.txt"), "wb") as fh:     # a new file of our own is fine
        fh.write(b"ok")


# -- item 12: a LOCAL_DIR another user owns, can write, or has planted links in -----------------
def start_fails(local_dir, *words):
    from click.testing import CliRunner
    from jobledger.cli import main
    result = CliRunner().invoke(main, ["pool", "start", "--local-dir", str(local_dir)])
    assert result.exit_code == 1 and result.output.count("\n") == 1, result.output
    for word in words:
        assert word in result.output, result.output
    assert not (local_dir / "run" / "master.sock").exists()


@needs_root
def test_a_local_dir_another_user_prepared_is_refused(tmp_path):
    precious = tmp_path / "precious.txt"
    precious.write_text("the owner's data\n")
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o777)
    os.chmod(theirs, 0o777)
    os.chown(theirs, NOBODY, NOBODY)
    plant(theirs, "condor_config", precious)
    start_fails(theirs, "owned by uid 65534")
    assert precious.read_text() == "the owner's data\n"


def test_a_local_dir_others_can_write_is_refused(tmp_path):
    local = tmp_path / "open"
    local.mkdir()
    os.chmod(local, 0o775)
    start_fails(local, "writable by others (mode 0775)")


@pytest.mark.parametrize("name, words", [("log", ("log/", "symlink")),
                                          ("condor_config", ("condor_config", "symlink"))])
def test_symlinks_inside_local_dir_are_refused(tmp_path, name, words):
    local = tmp_path / "pool"
    local.mkdir(mode=0o700)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (local / name).symlink_to(elsewhere if name == "log" else tmp_path / "precious.txt")
    start_fails(local, *words)
    assert not list(elsewhere.iterdir())
