"""condor_submit, condor_q, condor_rm/hold/release, condor_qedit against a real pool.

Outputs are compared with the forms HTCondor's man pages document
("N job(s) submitted to cluster C.", "C.0 - C.N", "All jobs in cluster C
have been marked for removal", "Job C.P not found", ...).
"""

from __future__ import annotations

import os
import re

import pytest

from jobledger.condor_cli import act, queue, submit
from tests.condor_cli.conftest import run

SLEEP = "executable = /bin/sleep\narguments = 600\nhold = true\n"


@pytest.fixture
def subfile(tmp_path, pool):
    def make(text: str = SLEEP + "queue 3\n") -> str:
        path = tmp_path / f"job{len(list(tmp_path.iterdir()))}.sub"
        path.write_text(text)
        return str(path)
    os.environ["CONDOR_CONFIG"] = str(pool.config_file)
    return make


def submitted(ran) -> int:
    match = re.fullmatch(r"Submitting job\(s\)(\.+)\n(\d+) job\(s\) submitted to cluster (\d+)\.\n", ran.out)
    assert match, ran
    assert len(match.group(1)) == int(match.group(2))  # one dot per job
    return int(match.group(3))


def test_submit_prints_htcondors_lines_and_q_af_shows_the_jobs(subfile):
    ran = run(submit.main, subfile())
    assert ran.status == 0
    cluster = submitted(ran)
    assert ran.out.startswith("Submitting job(s)...\n3 job(s) submitted")
    listed = run(queue.main, str(cluster), "-af", "ClusterId", "ProcId", "JobStatus")
    assert listed.out == "".join(f"{cluster} {p} 5\n" for p in range(3))
    assert run(queue.main, f"{cluster}.1", "-af:j", "Cmd").out == f"{cluster}.1 /bin/sleep\n"


def test_submit_terse_queue_macros_batch_name_and_append(subfile):
    ran = run(submit.main, "-terse", "-queue", "2", "-batch-name", "nightly", "-a", "request_memory = 7",
              "tag=blue", "-file", subfile(SLEEP + "+Color = \"$(tag)\"\n"))
    assert ran.status == 0 and re.fullmatch(r"(\d+)\.0 - \1\.1\n", ran.out), ran
    cluster = ran.out.split(".")[0]
    shown = run(queue.main, cluster, "-af", "JobBatchName", "RequestMemory", "Color")
    assert shown.out == "nightly 7 blue\n" * 2


def test_submit_from_stdin_is_verbose_and_dry_run_submits_nothing(subfile, tmp_path):
    ran = run(submit.main, "-", stdin=SLEEP + "queue 1\n")
    assert ran.status == 0 and re.match(r"\n\*\* Proc \d+\.0:\n", ran.out) and 'Cmd = "/bin/sleep"' in ran.out
    ran = run(submit.main, "-dry-run", str(tmp_path / "ads"), subfile(SLEEP + "Marker = 17\nqueue 3\n"))
    assert ran.out == "Dry-Run job(s)...\n3 job(s) dry-run to cluster 1.\n"
    assert (tmp_path / "ads").read_text().count("ProcId = ") == 3
    assert run(queue.main, "-allusers", "-constraint", "Marker == 17", "-af", "ClusterId").out == ""


def test_a_bad_submit_submits_nothing(subfile):
    first = submitted(run(submit.main, subfile()))
    ran = run(submit.main, subfile("executable = /bin/true\nqueue x from /no/such/items\n"))
    assert ran.status == 1 and "ERROR" in ran.err and "Traceback" not in ran.err
    ran = run(submit.main, subfile("executable = /bin/true\n"))
    assert ran.status == 1 and "doesn't contain any \"queue\" commands" in ran.err
    ran = run(submit.main, "/no/such/file.sub")
    assert ran.status == 1 and "Failed to open command file (/no/such/file.sub)" in ran.err
    last = submitted(run(submit.main, subfile()))
    between = f"ClusterId > {first} && ClusterId < {last}"
    assert run(queue.main, "-allusers", "-constraint", between, "-af", "ClusterId").out == ""
    from jobledger.condor_cli import history
    assert run(history.main, "-constraint", between, "-af", "ClusterId").out == ""


def test_unknown_flags_print_usage_and_exit_1(subfile):
    for main, name in ((submit.main, "condor_submit"), (queue.main, "condor_q"), (act.rm, "condor_rm")):
        ran = run(main, "-no-such-flag")
        assert ran.status == 1 and f"Usage: {name}" in ran.err and not ran.out
    assert run(queue.main, "-limit").status == 1
    assert run(queue.main, "12x").status == 1
    assert "You did not specify any jobs" in run(act.rm).err


def test_q_default_output_has_banner_batches_and_totals(subfile):
    cluster = submitted(run(submit.main, subfile()))
    ran = run(queue.main)
    lines = ran.out.split("\n")
    assert lines[0] == lines[1] == ""
    assert re.fullmatch(r"-- Schedd: \S+ : <127\.0\.0\.1:0\?\.\.\. @ \d\d/\d\d/\d\d \d\d:\d\d:\d\d", lines[2])
    assert re.match(r"OWNER +BATCH_NAME    SUBMITTED   DONE   RUN    IDLE   HOLD  TOTAL JOB_IDS$", lines[3])
    assert any(re.search(rf"ID: {cluster} .* 3 {cluster}\.0-2$", line) for line in lines)
    assert re.search(r"\n\nTotal for query: \d+ jobs; \d+ completed, \d+ removed, \d+ idle, \d+ running, "
                     r"\d+ held, \d+ suspended \nTotal for \S+: .* \nTotal for all users: \d+ jobs; .*"
                     r"suspended\n\n$", ran.out)
    totals = run(queue.main, "-totals")
    assert totals.out.startswith("Total for query: ")
    nobatch = run(queue.main, "-nobatch", str(cluster))
    assert nobatch.out.split("\n")[3] == " ID      OWNER            SUBMITTED     RUN_TIME ST PRI SIZE CMD"
    assert re.search(rf"\n *{cluster}\.0 .* H  0 +0\.0 sleep 600\n", nobatch.out)
    held = run(queue.main, "-hold", str(cluster))
    assert "HOLD_REASON" in held.out and held.out.count(" H ") == 0 and f"{cluster}.2" in held.out


def test_q_long_json_limit_and_constraint(subfile):
    cluster = submitted(run(submit.main, subfile()))
    ran = run(queue.main, "-json", "-attributes", "ProcId,ClusterId", "-constraint", f"ClusterId == {cluster}")
    assert ran.out == "".join(("[\n" if p == 0 else ",\n") + f'{{\n  "ClusterId": {cluster},\n  "ProcId": {p}\n}}\n'
                              for p in range(3)) + "]\n"
    assert run(queue.main, "-long", f"{cluster}.0").out.count("\n\n") == 1
    assert len(run(queue.main, "-limit", "2", str(cluster), "-af", "ProcId").out.splitlines()) == 2


def test_rm_hold_release_messages(subfile):
    cluster = submitted(run(submit.main, subfile()))
    ran = run(act.release, f"{cluster}.0", f"{cluster}.9")
    assert ran.status == 1
    assert ran.out == f"Job {cluster}.0 released\n" and ran.err == f"Job {cluster}.9 not found\n"
    ran = run(act.hold, f"{cluster}.0", "-reason", "lunch")
    assert ran.status == 0 and ran.out == f"Job {cluster}.0 held\n"
    assert run(queue.main, f"{cluster}.0", "-af", "HoldReason").out.startswith("lunch")
    assert run(act.hold, f"{cluster}.0").err == f"Job {cluster}.0 already held\n"
    ran = run(act.release, "-constraint", f"ClusterId == {cluster}")
    assert ran.out == f"All jobs matching constraint (ClusterId == {cluster}) have been released\n"
    ran = run(act.rm, str(cluster))
    assert ran.status == 0 and ran.out == f"All jobs in cluster {cluster} have been marked for removal\n"
    assert run(queue.main, str(cluster), "-af", "ProcId").out == ""
    # Another job in the queue: with none at all, condor_rm says "There are no jobs in the
    # queue" and exits 0 instead (as HTCondor's does), whatever tests ran before this one.
    other = submitted(run(submit.main, subfile(SLEEP + "queue 1\n")))
    ran = run(act.rm, str(cluster))
    assert ran.status == 1 and f"Couldn't find/remove all jobs in cluster {cluster}" in ran.err
    ran = run(act.rm, "nosuchuser", "-totals")
    assert ran.out.startswith("0 Succeeded, 0 Failed, 0 Not Found")
    assert run(act.rm, str(other)).status == 0


def test_qedit_sets_attributes_of_matching_jobs(subfile):
    cluster = submitted(run(submit.main, subfile()))
    ran = run(act.qedit_main, str(cluster), "Flavor", '"mint"', "Scoops", "2")
    assert ran.out == 'Set attribute "Flavor" for 3 matching jobs.\nSet attribute "Scoops" for 3 matching jobs.\n'
    assert run(queue.main, str(cluster), "-af", "Flavor", "Scoops").out == "mint 2\n" * 3
    ran = run(act.qedit_main, str(cluster), "Broken", "(((")
    assert ran.status == 1 and run(queue.main, str(cluster), "-af", "Broken").out == "undefined\n" * 3
    assert run(act.reschedule_main).out == 'Sent "Reschedule" command to local schedd\n'


def test_history_lists_removed_jobs_newest_first(subfile):
    from jobledger.condor_cli import history
    first = submitted(run(submit.main, subfile(SLEEP + "queue 2\n")))
    second = submitted(run(submit.main, subfile(SLEEP + "queue 1\n")))
    assert run(act.rm, str(first), str(second)).status == 0
    from tests.pool.conftest import wait_until
    wait_until(lambda: len(run(history.main, "-af", "ClusterId", "-constraint",
                               f"ClusterId >= {first}").out.split()) == 3, what="history rows")
    ran = run(history.main, "-af:j", "JobStatus", "-constraint", f"ClusterId >= {first}")
    assert ran.out == f"{second}.0 3\n{first}.1 3\n{first}.0 3\n"
    assert run(history.main, "-limit", "1", "-constraint", f"ClusterId >= {first}", "-af", "ClusterId").out \
        == f"{second}\n"
    table = run(history.main, str(first)).out.splitlines()
    assert table[0] == " ID          OWNER            SUBMITTED   RUN_TIME   ST   COMPLETED CMD"
    assert table[1].startswith(f" {first}.1") or table[1].startswith(f"{first}.1")
    assert run(history.main, "-bogus").status == 1


def test_submit_spool_and_name(subfile):
    ran = run(submit.main, "-spool", "-terse", subfile("executable = /bin/sleep\narguments = 600\nqueue 1\n"))
    assert ran.status == 0
    cluster = ran.out.split(".")[0]
    # -spool holds the jobs while their input is spooled, then releases them
    assert run(queue.main, cluster, "-af", "JobStatus").out in ("1\n", "2\n")
    assert run(act.rm, cluster).status == 0
    ran = run(submit.main, "-name", "no-such-schedd", subfile())
    assert ran.status == 1 and "Can't find address of schedd no-such-schedd" in ran.err


def test_rm_held_users_with_constraint_and_qedit_attr_equals_value(subfile):
    cluster = submitted(run(submit.main, subfile()))
    ran = run(act.qedit_main, "-constraint", f"ClusterId == {cluster}", "OnExitRemove=FALSE")
    assert ran.out == 'Set attribute "OnExitRemove" for 3 matching jobs.\n'
    assert run(queue.main, str(cluster), "-af", "OnExitRemove").out == "false\n" * 3
    assert run(act.release, f"{cluster}.0").status == 0
    me = run(queue.main, str(cluster), "-af", "Owner").out.split()[0]
    ran = run(act.hold, me, "-constraint", f"ClusterId == {cluster} && ProcId == 0")
    assert ran.out == (f"All jobs matching constraint ((ClusterId == {cluster} && ProcId == 0) && "
                       f"(Owner == \"{me}\")) have been held\n")
    ran = run(act.rm, "-held", str(cluster))
    assert ran.out == f"All held jobs in cluster {cluster} have been marked for removal\n"
    assert run(queue.main, str(cluster), "-af", "ProcId").out == ""
