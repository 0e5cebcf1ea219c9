"""The schedd's User and Project records (htcondor2's ``queryUserAds`` ... ``disableProjectRec``
and ``condor_qusers``) against a real pool, as HTCondor's schedd keeps them: journaled,
so they survive a kill -9 of the schedd; a disabled user's submit refused with HTCondor's
words; removing a user with jobs queued disables it instead, removing a project with jobs
is refused (Result 16, "Project X is in use"); an unknown name is a result ad with
Result 2, not an exception (HTCondor's bindings return the schedd's result ad)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

import jobledger as htcondor
from jobledger.daemons.client.api import _user
from jobledger.eventcore.classad import ClassAd, ExprTree
from jobledger.eventcore.errors import HTCondorException
from tests.pool.conftest import running_pool, wait_until
from tests.pool.test_crash import daemon_pid



@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    yield from running_pool(tmp_path_factory, NUM_CPUS="3")


def me(schedd) -> str:
    """This user's User (``owner@<UID domain>``), as the schedd names it."""
    return next(ad["User"] for ad in schedd.queryUserAds() if ad["Owner"] == _user())


def held_job(schedd, tmp_path, **extra) -> int:
    """A cluster of one job, submitted held (it stays in the queue, never runs)."""
    submit = {"executable": "/bin/true", "hold": "true", "initialdir": str(tmp_path)}
    submit.update(extra)
    return schedd.submit(htcondor.Submit(submit)).cluster()


def qusers(pool, *args) -> subprocess.CompletedProcess:
    env = dict(os.environ, CONDOR_CONFIG=str(pool.config_file))
    script = os.path.join(os.path.dirname(sys.executable), "condor_qusers")
    return subprocess.run([script, *args], env=env, capture_output=True, text=True, timeout=60)


def test_a_submitter_has_a_record_with_live_counts(pool, tmp_path):
    schedd = htcondor.Schedd()
    cluster = held_job(schedd, tmp_path)
    try:
        user = me(schedd)
        (ad,) = schedd.queryUserAds(f'User == "{user}"')
        assert ad["MyType"] == "Owner" and ad["Owner"] == _user() and ad["OsUser"] == _user()
        assert ad["Enabled"] in (1, True) and ad["NumHeld"] >= 1 and ad["NumJobs"] >= 1
        assert set(schedd.queryUserAds(f'User == "{user}"', ["User", "NumHeld"])[0].keys()) == {"User", "NumHeld"}
        assert schedd.queryUserAds(ExprTree(f'User == "{user}"'))[0]["User"] == user
        assert schedd.queryUserAds(limit=0) == []
        assert schedd.queryUserAds(callback=lambda ad: None) == []
        assert schedd.queryUserAds(callback=lambda ad: ad["User"]) == [a["User"] for a in schedd.queryUserAds()]
        with pytest.raises(HTCondorException, match="Parse error in constraint"):
            schedd.queryUserAds("User == ")
        with pytest.raises(TypeError):
            schedd.queryUserAds("", "User")
    finally:
        schedd.act(htcondor.JobAction.Remove, f"ClusterId == {cluster}")


def test_add_disable_enable_edit_remove_a_user(pool):
    schedd = htcondor.Schedd()
    result = schedd.addUserRec("alice")
    assert result["NumAds"] == 1 and result["Result"] == 0
    (ad,) = schedd.queryUserAds('Owner == "alice"')
    user = ad["User"]
    assert user.startswith("alice@") and ad["OsUser"] == "alice" and ad["Enabled"] in (1, True)
    assert ad["NumJobs"] == 0

    assert schedd.disableUserRec(user, "over quota")["NumAds"] == 1
    (ad,) = schedd.queryUserAds(f'User == "{user}"')
    assert ad["Enabled"] in (0, False) and ad["DisableReason"] == "over quota"
    assert schedd.queryUserAds("Enabled == false", ["User"])[0]["User"] == user

    assert schedd.enableUserRec(["alice"])["NumAds"] == 1
    (ad,) = schedd.queryUserAds(f'User == "{user}"')
    assert ad["Enabled"] in (1, True) and "DisableReason" not in ad

    edit = ClassAd({"User": user, "MaxJobsRunning": 5, "Site": "north", "NumIdle": 9})
    result = schedd.updateUserRec([edit])
    assert result["Result"] == 0 and result["NumAds"] == 1 and result["NumAttributesSet"] == 2
    assert "reserved" in result["Warning"]       # NumIdle is a live count: ignored, said so
    (ad,) = schedd.queryUserAds(f'User == "{user}"')
    assert ad["MaxJobsRunning"] == 5 and ad["Site"] == "north" and ad["NumIdle"] == 0
    assert schedd.updateUserRec([ClassAd({"User": user, "Site": ExprTree("delete")})])["Result"] == 0
    assert "Site" not in schedd.queryUserAds(f'User == "{user}"')[0]

    # by constraint: disabled, then enabled, then removed
    assert schedd.disableUserRec(ExprTree('Owner == "alice"'))["NumAds"] == 1
    assert schedd.queryUserAds(f'User == "{user}"')[0]["DisableReason"] == "Python-initiated action"
    assert schedd.enableUserRec(ExprTree('Owner == "alice"'))["NumAds"] == 1
    assert schedd.removeUserRec(user)["NumAds"] == 1
    assert schedd.queryUserAds('Owner == "alice"') == []

    # adding twice: the second is an enable of the record there
    schedd.addUserRec([ClassAd({"User": "bob", "Site": "south"})])
    assert schedd.queryUserAds('Owner == "bob"')[0]["Site"] == "south"
    assert schedd.addUserRec("bob")["NumAds"] == 1
    assert len(schedd.queryUserAds('Owner == "bob"')) == 1
    schedd.removeUserRec(ExprTree('Owner == "bob"'))
    assert schedd.queryUserAds('Owner == "bob"') == []


def test_unknown_names_and_bad_specs(pool):
    schedd = htcondor.Schedd()
    for act in (schedd.enableUserRec, schedd.disableUserRec, schedd.removeUserRec):
        result = act("nobody-here")
        assert result["Result"] == 2 and result["NumAds"] == 0      # ENOENT, in the result ad
    result = schedd.updateUserRec([ClassAd({"User": "nobody-here", "X": 1})])
    assert result["Result"] == 2
    # one unknown name aborts the whole command: nothing of it is kept
    assert schedd.disableUserRec(["nobody-here"])["Result"] == 2
    with pytest.raises(TypeError):
        schedd.addUserRec(5)
    with pytest.raises(TypeError):
        schedd.disableUserRec(["a", ClassAd()])
    for bad in (lambda: schedd.updateUserRec("alice"),                 # edit needs ads
                lambda: schedd.updateUserRec(ExprTree("true")),
                lambda: schedd.disableUserRec([ClassAd({"User": "x"})]),
                lambda: schedd.addUserRec([ClassAd({"Site": "x"})]),    # names no User
                lambda: schedd.enableProjectRec(ExprTree("true"))):
        with pytest.raises(HTCondorException, match="Error when performing user or project action"):
            bad()


def test_a_disabled_user_cannot_submit(pool, tmp_path):
    schedd = htcondor.Schedd()
    cluster = held_job(schedd, tmp_path)
    user = me(schedd)
    schedd.act(htcondor.JobAction.Remove, f"ClusterId == {cluster}")
    try:
        assert schedd.disableUserRec(user, "too many jobs")["NumAds"] == 1
        with pytest.raises(HTCondorException, match=f"User {user} is disabled : too many jobs"):
            held_job(schedd, tmp_path)
        ran = subprocess.run([os.path.join(os.path.dirname(sys.executable), "condor_submit")],
                             input=f"executable = /bin/true\ninitialdir = {tmp_path}\nqueue\n",
                             env=dict(os.environ, CONDOR_CONFIG=str(pool.config_file)),
                             capture_output=True, text=True, timeout=60)
        assert ran.returncode != 0 and f"User {user} is disabled : too many jobs" in ran.stderr
    finally:
        schedd.enableUserRec(user)
    schedd.act(htcondor.JobAction.Remove, f"ClusterId == {held_job(schedd, tmp_path)}")


def test_removing_a_user_with_jobs_disables_it(pool, tmp_path):
    """HTCondor's schedd (act_on_user, DELETE_USERREC): a record still used by jobs in the
    queue is not removed but disabled."""
    schedd = htcondor.Schedd()
    cluster = held_job(schedd, tmp_path)
    user = me(schedd)
    try:
        result = schedd.removeUserRec(user)
        assert result["Result"] == 0 and result["NumAds"] == 1
        (ad,) = schedd.queryUserAds(f'User == "{user}"')
        assert ad["Enabled"] in (0, False)
    finally:
        schedd.enableUserRec(user)
        schedd.act(htcondor.JobAction.Remove, f"ClusterId == {cluster}")
    wait_until(lambda: not schedd.query(f"ClusterId == {cluster}", ["ProcId"]), 60, what="the job gone")
    assert schedd.removeUserRec(user)["NumAds"] == 1
    assert schedd.queryUserAds(f'User == "{user}"') == []     # journaled record dropped, no jobs


def test_max_jobs_running_of_a_user_record(pool, tmp_path):
    """HTCondor's Runnable(): a job whose owner already runs their record's MaxJobsRunning
    waits. With 1 and three cores free, three jobs run one after another."""
    schedd = htcondor.Schedd()
    schedd.act(htcondor.JobAction.Remove, f"ClusterId == {held_job(schedd, tmp_path)}")
    user = me(schedd)
    assert schedd.updateUserRec([ClassAd({"User": user, "MaxJobsRunning": 1})])["NumAttributesSet"] == 1
    try:
        cluster = schedd.submit(htcondor.Submit({"executable": "/bin/sleep", "arguments": "1",
                                                 "initialdir": str(tmp_path)}), count=3).cluster()
        wait_until(lambda: len(schedd.history(f"ClusterId == {cluster}", ["ProcId"])) == 3, 180,
                   what="the three jobs to finish")
    finally:
        schedd.updateUserRec([ClassAd({"User": user, "MaxJobsRunning": ExprTree("delete")})])
    runs = sorted((ad["JobStartDate"], ad["CompletionDate"]) for ad in
                  schedd.history(f"ClusterId == {cluster}", ["JobStartDate", "CompletionDate"]))
    assert all(later[0] >= earlier[1] for earlier, later in zip(runs, runs[1:])), runs
    assert "MaxJobsRunning" not in schedd.queryUserAds(f'User == "{user}"')[0]


def test_max_jobs_running_of_a_project_record(pool, tmp_path):
    """HTCondor's Runnable() checks the job's project as well as its owner: with the Project
    record's MaxJobsRunning at 1, its ten jobs run one after another, while a job of no
    project, queued after all of them, starts beside them (the capped jobs, more than the
    negotiator asks for, do not crowd it out)."""
    schedd = htcondor.Schedd()
    assert schedd.addProjectRec([ClassAd({"Name": "capped", "MaxJobsRunning": 1})])["NumAds"] == 1
    try:
        gate = tmp_path / "gate"
        script = tmp_path / "wait.sh"
        script.write_text(f"#!/bin/sh\nwhile [ ! -e {gate} ]; do sleep 0.1; done\n")
        script.chmod(0o755)
        sub = {"executable": str(script), "initialdir": str(tmp_path)}
        cluster = schedd.submit(htcondor.Submit({**sub, "project_name": "capped"}), count=10).cluster()
        wait_until(lambda: len(schedd.query(f"ClusterId == {cluster} && JobStatus == 2", ["ProcId"])) == 1,
                   120, what="one of the project's jobs to run")
        free = schedd.submit(htcondor.Submit(sub)).cluster()
        wait_until(lambda: schedd.query(f"ClusterId == {free} && JobStatus == 2", ["ProcId"]), 120,
                   what="the job of no project to run beside it, a core being free")
        assert len(schedd.query(f"ClusterId == {cluster} && JobStatus == 2", ["ProcId"])) == 1
        (ad,) = schedd.queryProjectAds('Name == "capped"')
        assert ad["NumRunning"] == 1 and ad["NumIdle"] == 9
        gate.write_text("")
        wait_until(lambda: len(schedd.history(f"ClusterId == {cluster} || ClusterId == {free}",
                                              ["ProcId"])) == 11, 300, what="the eleven jobs to finish")
    finally:
        gate.write_text("")
        schedd.updateProjectRec([ClassAd({"Name": "capped", "MaxJobsRunning": ExprTree("delete")})])
    runs = sorted((ad["JobStartDate"], ad["CompletionDate"]) for ad in
                  schedd.history(f"ClusterId == {cluster}", ["JobStartDate", "CompletionDate"]))
    assert all(later[0] >= earlier[1] for earlier, later in zip(runs, runs[1:])), runs
    wait_until(lambda: schedd.removeProjectRec("capped")["NumAds"] == 1, 60, what="the project free of jobs")


def test_project_records(pool, tmp_path):
    schedd = htcondor.Schedd()
    assert schedd.addProjectRec(["physics", "chem"])["NumAds"] == 2
    names = {ad["Name"] for ad in schedd.queryProjectAds()}
    assert {"physics", "chem"} <= names
    (ad,) = schedd.queryProjectAds('Name == "physics"')
    assert ad["MyType"] == "Project" and ad["Enabled"] in (1, True)
    assert schedd.disableProjectRec("physics", "closed")["NumAds"] == 1
    assert schedd.queryProjectAds('Name == "physics"')[0]["DisableReason"] == "closed"
    with pytest.raises(HTCondorException, match="Project physics is suspended : closed"):
        held_job(schedd, tmp_path, **{"+ProjectName": '"physics"'})
    assert schedd.enableProjectRec("physics")["NumAds"] == 1
    again = held_job(schedd, tmp_path, **{"+ProjectName": '"physics"'})   # enabled: taken again
    schedd.act(htcondor.JobAction.Remove, f"ClusterId == {again}")
    assert schedd.updateProjectRec([ClassAd({"Name": "physics", "Budget": 10})])["NumAttributesSet"] == 1
    assert schedd.queryProjectAds('Name == "physics"', ["Budget"])[0]["Budget"] == 10
    # by name, an unknown project is passed over (HTCondor's schedd): nothing done, no error
    assert schedd.disableProjectRec("nowhere")["NumAds"] == 0
    cluster = held_job(schedd, tmp_path, **{"+ProjectName": '"chem"'})
    try:
        result = schedd.removeProjectRec("chem")
        assert result["Result"] == 16 and result["NumAds"] == 0
        assert "Project chem is in use" in result["ErrorString"]
        assert schedd.queryProjectAds('Name == "chem"')[0]["NumHeld"] == 1
    finally:
        schedd.act(htcondor.JobAction.Remove, f"ClusterId == {cluster}")
    wait_until(lambda: not schedd.query(f"ClusterId == {cluster} || ClusterId == {again}", ["ProcId"]), 60,
               what="the projects' jobs gone")
    assert schedd.removeProjectRec(ExprTree('Name == "chem" || Name == "physics"'))["NumAds"] == 2
    assert not {"physics", "chem"} & {ad["Name"] for ad in schedd.queryProjectAds()}


def test_condor_qusers(pool):
    ran = qusers(pool, "-add", "carol", "dave")
    assert ran.returncode == 0 and ran.stdout == "add succeeded: \n", ran.stderr
    ran = qusers(pool, "carol", "dave")
    lines = ran.stdout.splitlines()
    assert lines[0].split() == ["USER", "OS_USER", "ENABLED", "MAX_RUN", "JOBS:Idle", "Running", "Held",
                                "Removed", "Completed"]
    rows = {line.split()[0].partition("@")[0]: line.split() for line in lines[1:]}
    assert set(rows) == {"carol", "dave"}
    assert rows["carol"][1:] == ["carol", "yes", "default", "0", "0", "0", "0", "0"]

    ran = qusers(pool, "-disable", "carol", "-reason", "audit")
    assert ran.returncode == 0 and ran.stdout.startswith("disable succeeded")
    ran = qusers(pool, "-af", "Owner", "Enabled", "DisableReason", "-constraint", 'Owner == "carol"')
    assert ran.stdout == "carol 0 audit\n"
    ran = qusers(pool, "-enable", "carol")
    assert ran.stdout.startswith("enable succeeded")
    ran = qusers(pool, "-edit", "MaxJobsRunning=3", "carol")
    assert ran.returncode == 0 and ran.stdout.startswith("edit succeeded")
    ran = qusers(pool, "-long", "carol")
    assert "MaxJobsRunning = 3\n" in ran.stdout and 'OsUser = "carol"\n' in ran.stdout
    ran = qusers(pool, "carol")
    assert ran.stdout.splitlines()[1].split()[3] == "3"
    # -disable / -enable with edits: HTCondor's suspend and unsuspend
    ran = qusers(pool, "-disable", "dave", "MaxJobsRunning=0", "-reason", "paused")
    assert ran.returncode == 0 and ran.stdout == "suspend succeeded: \n", ran.stderr
    ran = qusers(pool, "-af", "Enabled", "MaxJobsRunning", "DisableReason", "-constraint", 'Owner == "dave"')
    assert ran.stdout == "0 0 paused\n"
    ran = qusers(pool, "-enable", "dave", "MaxJobsRunning=undefined")
    assert ran.returncode == 0 and ran.stdout.startswith("unsuspend succeeded"), ran.stderr
    ran = qusers(pool, "-af", "Enabled", "MaxJobsRunning", "DisableReason", "-constraint", 'Owner == "dave"')
    assert ran.stdout == "1 undefined undefined\n"
    ran = qusers(pool, "-remove", "dave", "X=1")
    assert ran.returncode == 2 and "only work with -edit" in ran.stderr

    ran = qusers(pool, "-disable", "nobody-here")
    assert ran.returncode == 2 and ran.stdout.startswith("disable failed")
    ran = qusers(pool, "-remove", "-constraint", 'Owner == "carol" || Owner == "dave"')
    assert ran.returncode == 0 and ran.stdout.startswith("remove succeeded")
    assert qusers(pool, "carol", "dave").stdout.splitlines()[1:] == []

    assert qusers(pool, "-projects", "-add", "bio").returncode == 0
    ran = qusers(pool, "-projects", "-af", "Name", "Enabled")
    assert "bio 1\n" in ran.stdout
    lines = qusers(pool, "-projects", "-constraint", 'Name == "bio"').stdout.splitlines()
    assert lines[0].split() == ["NAME", "JOBS:Idle", "Running", "Held", "Completed", "SlotTime", "CpuTime",
                                "Removed", "RmvdCpuTime", "RmvdSlotTime", "Pending"]
    assert lines[1].split() == ["bio", "0", "0", "0", "0", "0", "0"]
    lines = qusers(pool, "-usage", "carol").stdout.splitlines()
    assert lines[0].split()[:2] == ["USER", "Completed"] and lines[0].split()[-3:] == ["Idle", "Running", "Held"]
    assert qusers(pool, "-projects", "-remove", "bio").stdout.startswith("remove succeeded")

    ran = qusers(pool, "add", "gina")          # a first bare word may name the operation
    assert ran.returncode == 0 and ran.stdout == "add succeeded: \n"
    assert qusers(pool, "rm", "gina").stdout.startswith("remove succeeded")
    ran = qusers(pool, "-reset", "gina")
    assert ran.returncode == 1 and "Unsupported command" in ran.stderr

    ran = qusers(pool, "-add")
    assert ran.returncode == 1 and "Error: add users - no names specified" in ran.stderr
    ran = qusers(pool, "-constraint", "Owner ==")
    assert ran.returncode == 1 and "invalid constraint" in ran.stderr
    ran = qusers(pool, "-reason", "x", "carol")
    assert ran.returncode == 1 and "-reason argument can only be used" in ran.stdout
    ran = qusers(pool, "-frobnicate")
    assert ran.returncode != 0 and "Traceback" not in ran.stderr


def test_records_survive_a_schedd_kill(fresh_pool, tmp_path):
    schedd = fresh_pool.schedd
    schedd.addUserRec(["erin", "frank"])
    schedd.disableUserRec("erin", "kept")
    schedd.addProjectRec("astro")
    schedd.removeUserRec("frank")
    before = daemon_pid(fresh_pool, "schedd")
    os.kill(before, signal.SIGKILL)
    wait_until(lambda: daemon_pid(fresh_pool, "schedd") != before, 30, what="a new schedd")

    def answered():
        try:
            return htcondor.Schedd().queryUserAds('Owner == "erin"')
        except HTCondorException:
            return None
    (ad,) = wait_until(answered, 60, what="the restarted schedd to answer")
    assert ad["Enabled"] in (0, False) and ad["DisableReason"] == "kept"
    schedd = htcondor.Schedd()
    assert schedd.queryUserAds('Owner == "frank"') == []
    assert [ad["Name"] for ad in schedd.queryProjectAds()] == ["astro"]


@pytest.fixture
def known_only_pool(tmp_path_factory):
    yield from running_pool(tmp_path_factory, ALLOW_SUBMIT_FROM_KNOWN_USERS_ONLY="true")


def test_known_users_only(known_only_pool, tmp_path):
    """ALLOW_SUBMIT_FROM_KNOWN_USERS_ONLY: a user with no record may not submit until added."""
    schedd = known_only_pool.schedd
    with pytest.raises(HTCondorException, match="Use condor_qusers to add user before submitting jobs"):
        held_job(schedd, tmp_path)
    assert schedd.addUserRec(_user())["NumAds"] == 1
    cluster = held_job(schedd, tmp_path)
    assert schedd.query(f"ClusterId == {cluster}", ["ProcId"])


NAMES = ("queryUserAds", "queryProjectAds", "addUserRec", "enableUserRec", "disableUserRec", "removeUserRec",
         "updateUserRec", "addProjectRec", "removeProjectRec", "updateProjectRec", "enableProjectRec",
         "disableProjectRec")


@pytest.mark.parametrize("name", NAMES)
def test_the_methods_take_htcondor2s_arguments(name):
    """Parameter names and defaults as the htcondor2 wheel's (25.x) Schedd has them."""
    import inspect
    htcondor2 = pytest.importorskip("htcondor2")

    def shape(function):
        return [(p.name, p.default) for p in inspect.signature(function).parameters.values()]
    assert shape(getattr(htcondor.Schedd, name)) == shape(getattr(htcondor2.Schedd, name))
