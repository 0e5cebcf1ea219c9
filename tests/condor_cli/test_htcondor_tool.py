"""The ``htcondor`` tool (HTCondor's noun-verb command) against a running pool: job submit
records submit method 3 and its job runs; eventlog read sums the log up one line a job;
job sets go in whole with JobSetName/InJobSet, are listed while queued and removed by name;
errors are HTCondor's "Error while trying to run NOUN VERB:" lines, exit status 1."""

from __future__ import annotations

import getpass
import sys

from jobledger.condor_cli.htcondor_tool import main as tool_main
from tests.condor_cli.conftest import run, wait_until


def main(argv):
    sys.exit(tool_main(argv))


def _queued(pool, constraint):
    return pool.schedd.query(constraint, ["JobStatus", "JobSubmitMethod", "JobSetName", "InJobSet", "Arguments", "Args"])


def test_no_arguments_prints_the_usage_and_a_missing_file_one_error(pool, tmp_path, monkeypatch):
    monkeypatch.setenv("CONDOR_CONFIG", str(pool.config_file))
    ran = run(main)
    assert ran.status == 2 and "A tool for managing HTCondor jobs and resources." in ran.err
    assert "Traceback" not in ran.err + ran.out
    ran = run(main, "job", "submit", str(tmp_path / "nope.sub"))
    assert (ran.status, ran.err.strip()) == (1, f"Error while trying to run job submit:\n"
                                                f"Could not find file: {tmp_path / 'nope.sub'}")
    sub = tmp_path / "one.sub"
    sub.write_text("executable = /bin/true\nqueue\n")
    ran = run(main, "job", "submit", str(sub), "--resource", "ec2")
    assert ran.err.strip() == ("Error while trying to run job submit:\n"
                               "Error: EC2 resources must specify a --runtime argument")
    sub.write_text("executable = /bin/true\nqueue 2\n")
    ran = run(main, "job", "submit", str(sub))
    assert ran.status == 1 and "Can only submit one job at a time" in ran.err


def test_job_submit_runs_the_job_and_eventlog_read_sums_it_up(pool, tmp_path, monkeypatch):
    monkeypatch.setenv("CONDOR_CONFIG", str(pool.config_file))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hello.sub").write_text("executable = /bin/echo\narguments = Hello, World!\nlog = hello.log\n"
                                        "output = hello.out\nqueue\n")
    ran = run(main, "job", "submit", "hello.sub")
    assert ran.status == 0 and ran.err.startswith("Job ") and ran.err.strip().endswith(" was submitted.")
    cluster = int(ran.err.split()[1])
    wait_until(lambda: "\n005 (" in "\n" + (tmp_path / "hello.log").read_text(), 60, what="the job's end")
    assert (tmp_path / "hello.out").read_text() == "Hello, World!\n"
    history = list(pool.schedd.history(f"ClusterId == {cluster}", ["JobSubmitMethod"], 1))
    assert history and history[0]["JobSubmitMethod"] == 3
    ran = run(main, "eventlog", "read", "hello.log")
    lines = ran.out.strip().split("\n")
    assert (ran.status, ran.err, len(lines)) == (0, "", 2), ran
    assert lines[0].split()[:2] == ["Job", "Host"] and lines[1].startswith(f"{cluster}.0 ")
    assert lines[1].split()[-1] == "0:00:00" or ":" in lines[1].split()[-1]


def test_a_job_set_goes_in_whole_is_listed_and_removed_by_name(pool, tmp_path, monkeypatch):
    monkeypatch.setenv("CONDOR_CONFIG", str(pool.config_file))
    monkeypatch.chdir(tmp_path)
    ran = run(main, "jobset", "list")
    assert ran.err.strip() == "No active job sets found." and ran.out == ""
    ran = run(main, "jobset", "submit", str(tmp_path / "missing.set"))
    assert ran.err.strip() == ("Error while trying to run jobset submit:\n"
                               f"[Errno 2] No such file or directory: '{tmp_path / 'missing.set'}'")
    (tmp_path / "states.set").write_text("""name = States
iterator = table A,B {
    wisconsin,iowa   # a comment
    iowa,illinois
}
job {
  executable = /bin/sleep
  arguments = 300 $(A)
  hold = true
}
job C=A D=B {
  executable = /bin/sleep
  arguments = 300 $(D)
  hold = true
}
""")
    ran = run(main, "jobset", "submit", "states.set")
    assert (ran.status, ran.err.strip()) == (0, "Submitted job set States containing 2 job clusters.")
    jobs = _queued(pool, 'JobSetName == "States"')
    assert len(jobs) == 4 and all(j["InJobSet"] is True and j["JobSubmitMethod"] == 5 for j in jobs)
    assert sorted(j.get("Arguments", j.get("Args")) for j in jobs) == ["300 illinois", "300 iowa", "300 iowa", "300 wisconsin"]
    ran = run(main, "jobset", "list")
    assert ran.out.split() == ["JOB_SET_NAME", "States"]
    ran = run(main, "jobset", "list", "--allusers")
    assert ran.out.split()[:2] == ["OWNER", "JOB_SET_NAME"] and "States" in ran.out
    ran = run(main, "jobset", "status", "States")
    assert "Set: States" in ran.out and "4 jobs; 0 completed; 0 removed; 0 idle; 0 running; 4 held" in ran.out
    ran = run(main, "jobset", "remove", "States")
    assert ran.err.strip() == f"Removed 4 jobs matching job set States for user {getpass.getuser()}."
    wait_until(lambda: not _queued(pool, 'JobSetName == "States"'), 60, what="the set to leave the queue")


def test_a_bad_job_set_file_names_its_line_and_submits_nothing(pool, tmp_path, monkeypatch):
    monkeypatch.setenv("CONDOR_CONFIG", str(pool.config_file))
    bad = tmp_path / "bad.set"
    bad.write_text("name = Bad\niterator = table A,B {\n  one,two\n  three\n}\njob {\n executable = /bin/true\n}\n")
    ran = run(main, "jobset", "submit", str(bad))
    assert ran.status == 1 and f"values (1) in {bad} at line 4" in ran.err
    bad.write_text("name = Bad\nflavor = sweet\n")
    ran = run(main, "jobset", "submit", str(bad))
    assert ran.status == 1 and 'Unrecognized command "flavor"' in ran.err and "line 2" in ran.err
    assert not _queued(pool, 'JobSetName == "Bad"')


def test_dag_submit_status_resources_halt_and_resume(pool, tmp_path, monkeypatch):
    monkeypatch.setenv("CONDOR_CONFIG", str(pool.config_file))
    monkeypatch.chdir(tmp_path)
    gate = tmp_path / "gate"
    gate.touch()
    (tmp_path / "wait.sub").write_text(f"executable = /bin/sh\narguments = \"-c 'while [ -e {gate} ]; do sleep 0.1;"
                                       " done'\"\nrequest_memory = 37\nqueue\n")
    (tmp_path / "d.dag").write_text("JOB NodeA wait.sub\nJOB NodeB wait.sub\nPARENT NodeA CHILD NodeB\n")
    ran = run(main, "dag", "submit", "d.dag")
    assert ran.status == 0 and ran.err.startswith("DAG ") and ran.err.strip().endswith(" was submitted.")
    dag_id = int(ran.err.split()[1])
    wait_until(lambda: pool.schedd.query(f"DAGManJobId == {dag_id} && JobStatus == 2", ["ClusterId"]), 60,
               what="NodeA to run")
    ran = run(main, "dag", "resources", str(dag_id))
    lines = ran.err.strip().splitlines()
    assert ran.status == 0 and lines[0].split() == ["NODE_NAME", "JOB_ID", "STATUS", "MEM_USAGE", "REQ_MEM",
                                                    "STARTS", "REMOTE_HOST"]
    node = [line for line in lines if line.startswith("NodeA")]
    assert len(node) == 1 and "Running" in node[0] and " 37 " in node[0] and node[0].split()[-1] != "-"
    history = list(pool.schedd.query(f"ClusterId == {dag_id}", ["JobSubmitMethod"]))
    assert history[0]["JobSubmitMethod"] == 4
    wait_until(lambda: "DAG contains 2 node(s) total" in run(main, "dag", "status", str(dag_id)).err, 60,
               what="DAGMan's counts in its ad")
    ran = run(main, "dag", "halt", str(dag_id), "-r", "enough")
    assert (ran.status, ran.err.strip()) == (0, f"Halted DAG {dag_id}")
    assert run(main, "dag", "resume", str(dag_id)).err.strip() == f"Resumed DAG {dag_id}"
    gate.unlink()
    wait_until(lambda: not pool.schedd.query(f"ClusterId == {dag_id}", ["JobStatus"]), 90, what="the DAG's end")
    ran = run(main, "dag", "status", "999999")
    assert ran.status == 1 and "No DAG found for ID 999999." in ran.err
