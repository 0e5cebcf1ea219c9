"""dagman.out as Pegasus's monitord reads it.

The expressions below are the ones monitord applies to every dagman.out line
(pegasus-isi/pegasus, packages/pegasus-python/src/Pegasus/cli/pegasus-monitord.py, commit
cea09ae0d20579d5467d0086763512158258743d: ``re_parse_*`` at the top of the file), restated
here so a change in our wording that would blind monitord fails a test.  A real DAG runs in a
real pool (a retry, PRE/POST scripts that succeed and fail, a job killed by a signal) and
each kind of line monitord looks for must be there with the values it extracts; pegasus-status
needs the ``DAG status:`` line.
"""

from __future__ import annotations

import re

from jobledger.eventcore.dagman import outlines
from tests.dag.test_dagman import run_dag, script, write

MONITORD = {
    "dag_name": re.compile(r"Parsing (.+) ...$"),
    "timestamp": re.compile(r"\s*(\d{1,2})\/(\d{1,2})(\/(\d{1,2}))?\s+(\d{1,2}):(\d{2}):(\d{2})"),
    "event": re.compile(r"Event:\s+ULOG_(\S+) for (?:HT|)Condor (?:Job|Node) (\S+)\s+\((-?[0-9]+\.[0-9]+)(\.[0-9]+)?\).*"),
    "script_running": re.compile(r"\d{2}\s(?:\(D_\w*\)\s)?Running (PRE|POST) script of (?:Job|Node) (.+)\.{3}"),
    "script_done": re.compile(r"\d{2}\s(?:\(D_\w*\)\s)?(PRE|POST) Script of (?:Job|[nN]ode) (\S+)"),
    "script_successful": re.compile(r"completed successfully\.$"),
    "script_failed": re.compile(r"failed with status\s+(-?\d+)\.?$"),
    "job_submit": re.compile(r"Submitting (?:HT|)Condor Node (.+) job"),
    "job_failed": re.compile(r"\d{2}\s(?:\(D_\w*\)\s)?Node (\S+) job proc \(([0-9\.]+)\) failed with (status|signal)\s+(-?\d+)\.$"),
    "job_successful": re.compile(r"\d{2}\s(?:\(D_\w*\)\s)?Node (\S+) job proc \(([0-9\.]+)\) completed successfully\.$"),
    "retry": re.compile(r"Retrying node (\S+) \(retry \#(\d+) of (\d+)\)"),
    "dagman_condor_id": re.compile(r"\*\* condor_scheduniv_exec\.([0-9\.]+) \(CONDOR_DAGMAN\) STARTING UP"),
    "dagman_finished": re.compile(r"\(condor_DAGMAN\)[\w\s]+EXITING WITH STATUS (\d+)$"),
    "dagman_pid": re.compile(r"\*\* PID = (\d+)$"),
    "condor_version": re.compile(r"\*\* \$CondorVersion: ((\d+)\.(\d+)\.(\d+))"),
    "multiline_files": re.compile(r"All DAG node user log files:"),
    "condor_logfile_insane": re.compile(r"\d{2}\s{3,}(\S+)"),
    "job_held": re.compile(r"\s*Hold reason:(.*)"),
}
# pegasus-status (Pegasus/cli/pegasus-status.py) takes the DAG's state from this line
DAG_STATUS = re.compile(r"DAG status: (\d+) \((\w+)\)")


def matches(lines, name):
    return [m for m in (MONITORD[name].search(line) for line in lines) if m]


def test_a_dag_run_says_everything_monitord_reads(pool, tmp_path):
    write(tmp_path / "ok.sub", "executable = /bin/true\nqueue\n")
    write(tmp_path / "flaky.sub", "executable = flaky.sh\narguments = $(RETRY)\nqueue\n")
    script(tmp_path / "flaky.sh", 'exit $((1 - $1))\n')            # fails on try 0, passes on try 1
    write(tmp_path / "killed.sub", "executable = killed.sh\nqueue\n")
    script(tmp_path / "killed.sh", "kill -9 $$\n")
    script(tmp_path / "pre.sh", "exit 0\n")
    script(tmp_path / "post_fail.sh", "exit 3\n")
    dag = ("JOB A ok.sub\nJOB B flaky.sub\nJOB C killed.sub\nJOB D ok.sub\n"
           "SCRIPT PRE A pre.sh\nSCRIPT POST D post_fail.sh\nRETRY B 2\nPARENT A CHILD B C D\n")
    cluster, ad = run_dag(pool, tmp_path, dag)
    assert ad["ExitCode"] == 1
    lines = (tmp_path / "d.dag.dagman.out").read_text().splitlines()
    assert all(MONITORD["timestamp"].match(line) for line in lines)

    assert [m.group(1) for m in matches(lines, "dagman_condor_id")] == [f"{cluster}.0"]
    assert matches(lines, "dagman_pid") and matches(lines, "condor_version")
    assert matches(lines, "dag_name")[0].group(1) == "d.dag"
    files_at = next(i for i, line in enumerate(lines) if MONITORD["multiline_files"].search(line))
    assert MONITORD["condor_logfile_insane"].search(lines[files_at + 1]).group(1) == str(tmp_path / "d.dag.nodes.log")

    events = {(m.group(1), m.group(2)) for m in matches(lines, "event")}
    for node in "ABCD":
        assert {("SUBMIT", node), ("EXECUTE", node)} <= events, node
    assert ("JOB_TERMINATED", "A") in events
    ids = {m.group(2): m.group(3) for m in matches(lines, "event")}
    assert all(re.fullmatch(r"\d+\.0", ids[node]) for node in "ABCD")

    submitted = [m.group(1) for m in matches(lines, "job_submit")]
    assert sorted(set(submitted)) == ["A", "B", "C", "D"] and submitted.count("B") == 2

    assert {m.group(1) for m in matches(lines, "job_successful")} == {"A", "B", "D"}
    failed = {(m.group(1), m.group(3), m.group(4)) for m in matches(lines, "job_failed")}
    assert failed == {("B", "status", "1"), ("C", "signal", "9")}
    assert [(m.group(1), m.group(2), m.group(3)) for m in matches(lines, "retry")] == [("B", "1", "2")]

    assert {(m.group(1), m.group(2)) for m in matches(lines, "script_running")} == {("PRE", "A"), ("POST", "D")}
    done = [line for line in lines if MONITORD["script_done"].search(line)]
    assert len(done) == 2
    pre = next(line for line in done if " PRE " in line)
    post = next(line for line in done if " POST " in line)
    assert MONITORD["script_successful"].search(pre) and not MONITORD["script_failed"].search(pre)
    assert MONITORD["script_failed"].search(post).group(1) == "3"

    assert [m.group(1) for m in matches(lines, "dagman_finished")] == ["1"]
    statuses = [DAG_STATUS.search(line) for line in lines if DAG_STATUS.search(line)]
    assert statuses and (statuses[-1].group(1), statuses[-1].group(2)) == ("2", "DAG_STATUS_NODE_FAILED")


def test_held_job_reason_and_the_lines_of_each_kind():
    """The texts themselves, for what a run cannot easily show (a hold, a submit refused)."""
    held = outlines.hold_reason("Error from slot1@host: out of memory")
    assert MONITORD["job_held"].match(held).group(1).strip() == "Error from slot1@host: out of memory"
    assert MONITORD["event"].search("06 " + outlines.event_line(12, "N.1", 7, 0, "11/28/26 06:00:00")).groups() == (
        "JOB_HELD", "N.1", "7.0", ".0")
    assert outlines.job_result("N", 7, 0, -1009) == "Node N job proc (7.0.0) failed with signal 9."
    assert outlines.script_done("POST", "N", 0) == "POST Script of node N completed successfully."
    assert outlines.dag_status_line(0) == "DAG status: 0 (DAG_STATUS_OK)"
    assert MONITORD["dagman_finished"].search(outlines.exiting("5.0", 99, 0)).group(1) == "0"
