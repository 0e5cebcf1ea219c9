"""condor_q's output forms against the examples in HTCondor's condor_q man page (no pool needed)."""

from __future__ import annotations

import time

import pytest

from jobledger.eventcore.classad import ClassAd
from jobledger.condor_cli import table
from jobledger.condor_cli.adprint import AutoFormat, Formats, ListWriter
from jobledger.condor_cli.args import Usage, dash_prefix
from jobledger.condor_cli.queue import _job_ids, batch_table, total_line


def job(cluster, proc, **attrs) -> ClassAd:
    qdate = int(time.mktime((2016, 9, 13, 16, 5, 0, 0, 0, -1)))
    base = {"ClusterId": cluster, "ProcId": proc, "Owner": "wenger", "QDate": qdate, "JobStatus": 2,
            "JobPrio": 0, "ImageSize": 0, "RemoteWallClockTime": 13}
    base.update(attrs)
    return ClassAd(base)


def test_nobatch_lines_match_the_man_page_example():
    # condor_q -nobatch, from the man page's nested-DAG example
    ads = [job(591, 0, ImageSize=2458, Cmd="/usr/bin/condor_dagman", Arguments="-p 0"),
           job(592, 1, Cmd="/bin/sleep", Arguments="300")]
    text = table.heading_line(table.JOB_DEFAULT) + "".join(table.row_line(table.JOB_DEFAULT, ad, 80)
                                                           for ad in ads)
    assert text == (" ID      OWNER            SUBMITTED     RUN_TIME ST PRI SIZE CMD\n"
                    " 591.0   wenger          9/13 16:05   0+00:00:13 R  0    2.4 condor_dagman -p 0\n"
                    " 592.1   wenger          9/13 16:05   0+00:00:13 R  0    0.0 sleep 300\n")


def _terminal(columns: int):
    """A real terminal (a pty) ``columns`` wide, as a writable file; its other end closed by the caller."""
    import fcntl
    import os
    import pty
    import struct
    import termios
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    return leader, os.fdopen(follower, "w")


def test_job_lines_are_cut_only_on_a_terminal_as_htcondor_does():
    # HTCondor's condor_q (queue.cpp): without -wide its print mask is set to the width of the
    # terminal less one -- the whole line, the last column included; when standard output is
    # not a terminal (a pipe, a file) it prints wide; -wide:N cuts at N-1 wherever it writes.
    import io
    import os
    from jobledger.condor_cli.queue import Options, job_table, line_width, parse
    opts = Options()
    opts.mode = "nobatch"
    ad = job(1, 0, Cmd="/bin/echo", Arguments="x" * 100)
    assert line_width(opts, io.StringIO()) == 0
    assert job_table(opts, [ad], line_width(opts, io.StringIO())).endswith("x" * 100 + "\n")
    leader, tty = _terminal(80)
    try:
        assert line_width(opts, tty) == 79
        assert [len(line) for line in job_table(opts, [ad], line_width(opts, tty)).splitlines()][1] == 79
        assert line_width(parse(["-wide"]), tty) == 0
    finally:
        tty.close()
        os.close(leader)
    assert line_width(parse(["-wide:100"]), io.StringIO()) == 99
    with pytest.raises(Usage, match="-wide:abc"):
        parse(["-wide:abc"])


def test_hold_reason_is_whole_into_a_pipe_and_cut_on_a_terminal():
    import io
    import os
    from jobledger.condor_cli.queue import Options, job_table, line_width
    reason = "Error from slot1@host: Failed to execute '/no/such/program': (errno=2: No such file or directory)"
    ad = job(7, 0, JobStatus=5, EnteredCurrentStatus=1473800700, HoldReasonCode=6, HoldReasonSubCode=2,
             HoldReason=reason)
    opts = Options()
    opts.mode = "hold"
    piped = job_table(opts, [ad], line_width(opts, io.StringIO())).splitlines()
    assert piped[0] == " ID      OWNER          HELD_SINCE  CODE/SUB HOLD_REASON"
    assert piped[1].endswith("   6/2   " + reason) and piped[1].startswith("   7.0   wenger")
    leader, tty = _terminal(100)
    try:
        cut = job_table(opts, [ad], line_width(opts, tty)).splitlines()[1]
    finally:
        tty.close()
        os.close(leader)
    assert cut == piped[1][:99]


def test_nobatch_dag_matches_the_man_page_example():
    """condor_q -nobatch -dag, the man page's nested-DAG example: node jobs under their
    DAGMan job (sub-DAG nodes one deeper), the other procs of each node cluster after."""
    from jobledger.condor_cli.queue import Options, job_table
    dagman = {"ImageSize": 2458, "Cmd": "/usr/bin/condor_dagman", "Arguments": "-p 0 -f -l . -Notification never"}

    def node(cluster, proc, name, dag, seconds, **attrs):
        base = {"Cmd": "/bin/sleep", "Arguments": "60" if proc == 0 else "300"}
        return job(cluster, proc, DAGManJobId=dag, DAGNodeName=name, RemoteWallClockTime=seconds,
                   **dict(base, **attrs))
    ads = [job(591, 0, RemoteWallClockTime=27, **dagman)]
    ads += [node(c, p, name, 591, 21) for c, name in ((592, "NodeA"), (593, "NodeB")) for p in (0, 1)]
    ads += [node(594, 0, "SubZ", 591, 21, **dagman)]
    ads += [node(c, p, name, 594, 15) for c, name in ((595, "NodeSA"), (596, "NodeSB")) for p in (0, 1)]
    opts = Options()
    opts.mode, opts.dag = "nobatch", True
    assert job_table(opts, ads[::-1], 79) == (   # an 80-column terminal, as the man page's
        " ID      OWNER/NODENAME      SUBMITTED     RUN_TIME ST PRI SIZE CMD\n"
        " 591.0   wenger             9/13 16:05   0+00:00:27 R  0    2.4 condor_dagman -\n"
        " 592.0    |-NodeA           9/13 16:05   0+00:00:21 R  0    0.0 sleep 60\n"
        " 593.0    |-NodeB           9/13 16:05   0+00:00:21 R  0    0.0 sleep 60\n"
        " 594.0    |-SubZ            9/13 16:05   0+00:00:21 R  0    2.4 condor_dagman -\n"
        " 595.0     |-NodeSA         9/13 16:05   0+00:00:15 R  0    0.0 sleep 60\n"
        " 596.0     |-NodeSB         9/13 16:05   0+00:00:15 R  0    0.0 sleep 60\n"
        " 592.1    |-NodeA           9/13 16:05   0+00:00:21 R  0    0.0 sleep 300\n"
        " 593.1    |-NodeB           9/13 16:05   0+00:00:21 R  0    0.0 sleep 300\n"
        " 595.1     |-NodeSA         9/13 16:05   0+00:00:15 R  0    0.0 sleep 300\n"
        " 596.1     |-NodeSB         9/13 16:05   0+00:00:15 R  0    0.0 sleep 300\n")
    opts.dag = False        # without -dag: the plain -nobatch table, in the query's order
    assert job_table(opts, ads).splitlines()[0].startswith(" ID      OWNER            SUBMITTED")


def test_format_prints_job_ids_as_the_man_page_example():
    # condor_q -format "%d." ClusterId -format "%d\n" ProcId  ->  27.0 27.1 ...
    formats = Formats("condor_q")
    formats.add("%d.", "ClusterId")
    formats.add(r"%d\n", "ProcId")
    assert "".join(formats.render(job(27, p)) for p in (0, 1, 7)) == "27.0\n27.1\n27.7\n"


def test_format_of_an_undefined_attribute_prints_nothing():
    formats = Formats("condor_q")
    formats.add("%s|", "NoSuchAttr")
    formats.add("%-6s|", "Owner")
    formats.add("%5.1f|", "ImageSize")
    assert formats.render(job(1, 0)) == "wenger|  0.0|"


@pytest.mark.parametrize("options,expected", [
    (None, "591 wenger undefined 1182\n"),
    ("j", "591.0 591 wenger undefined 1182\n"),
    (",", "591, wenger, undefined, 1182\n"),
    ("t", "591\twenger\tundefined\t1182\n"),
    ("V", '591 "wenger" undefined 1182\n'),
    ("l", "ClusterId = 591 Owner = wenger Nope = undefined ClusterId * 2 = 1182\n"),
    ("lrng", "\nClusterId = 591\nOwner = \"wenger\"\nNope = undefined\nClusterId * 2 = ClusterId * 2\n"),
])
def test_autoformat_options(options, expected):
    af = AutoFormat(["ClusterId", "Owner", "Nope", "ClusterId * 2"], options, "condor_q")
    assert af.row(job(591, 0)) == expected


def test_autoformat_headings_once():
    af = AutoFormat(["ClusterId", "Owner"], "h", "condor_q")
    assert af.heading() == "ClusterId Owner\n" and af.heading() == ""


def test_autoformat_rejects_l_with_h_and_bad_expressions():
    with pytest.raises(Usage):
        AutoFormat(["ClusterId"], "lh", "condor_q")
    with pytest.raises(Usage):
        AutoFormat(["a b"], None, "condor_q")


def test_json_and_xml_lists_have_htcondors_separators():
    ads = [job(1, 0), job(1, 1)]
    writer = ListWriter("json", ["ProcId", "ClusterId"])
    text = "".join(writer.ad(ad) for ad in ads) + writer.footer()
    assert text == ('[\n{\n  "ClusterId": 1,\n  "ProcId": 0\n}\n,\n'
                    '{\n  "ClusterId": 1,\n  "ProcId": 1\n}\n]\n')
    writer = ListWriter("xml", ["Owner"])
    text = writer.ad(ads[0]) + writer.footer()
    assert text == ('<?xml version="1.0"?>\n<!DOCTYPE classads SYSTEM "classads.dtd">\n<classads>\n'
                    '<c>\n    <a n="Owner"><s>wenger</s></a>\n</c>\n</classads>\n')
    assert ListWriter("json").footer() == ""
    long = ListWriter("long", ["Owner", "ClusterId"])
    assert long.ad(ads[0]) == 'ClusterId = 1\nOwner = "wenger"\n\n'


def test_batch_lines_and_job_id_ranges():
    ads = [job(599, p, Cmd="/bin/sleep", JobStatus=5 if p == 3 else 2) for p in range(4)]
    lines = batch_table(ads).splitlines()
    # the HOLD column appears only when a job is held (man page, "Output")
    assert lines[0] == "OWNER  BATCH_NAME    SUBMITTED   DONE   RUN    IDLE   HOLD  TOTAL JOB_IDS"
    assert lines[1] == "wenger ID: 599      9/13 16:05      _      3      _      1      4 599.0-3"
    assert "HOLD" not in batch_table([job(1, 0)]).splitlines()[0]
    assert _job_ids([job(3698, 0), job(3707, 0)]) == "3698.0 ... 3707.0"


def test_totals_line():
    assert total_line("query", {2: 13, 1: 1}) == \
        "Total for query: 14 jobs; 0 completed, 0 removed, 1 idle, 13 running, 0 held, 0 suspended"


@pytest.mark.parametrize("arg,name,least,expected", [
    ("-constraint", "constraint", 2, (True, None)), ("-const", "constraint", 2, (True, None)),
    ("--constraint", "constraint", 2, (True, None)), ("-c", "constraint", 2, (False, None)),
    ("-af:jh", "af", 2, (True, "jh")), ("-constraints", "constraint", 2, (False, None)),
    ("-", "af", 1, (False, None)), ("x", "af", 1, (False, None)),
])
def test_dash_prefix(arg, name, least, expected):
    assert dash_prefix(arg, name, least) == expected


def test_status_slot_line_and_summary_match_the_man_page_example():
    # condor_status, the man page's -compact example (its normal output)
    from jobledger.condor_cli.status import SLOT_COLUMNS, slot_summary
    now = 1_700_000_000
    slot = ClassAd({"Name": "slot1@vulture.cs.wisc.edu", "OpSys": "LINUX", "Arch": "X86_64",
                    "State": "Unclaimed", "Activity": "Idle", "CondorLoadAvg": 0.0, "Memory": 679,
                    "EnteredCurrentActivity": now - (86400 + 3 * 3600 + 18 * 60 + 58), "MyCurrentTime": now})
    busy = [ClassAd({"Name": f"slot1_{i}@vulture.cs.wisc.edu", "OpSys": "LINUX", "Arch": "X86_64",
                     "State": "Claimed", "Activity": "Busy", "CondorLoadAvg": 1.16, "Memory": 1152,
                     "EnteredCurrentActivity": now, "MyCurrentTime": now}) for i in range(1, 5)]
    assert table.heading_line(SLOT_COLUMNS) == \
        "Name               OpSys      Arch   State     Activity LoadAv Mem   ActvtyTime\n"
    assert table.row_line(SLOT_COLUMNS, slot) == \
        "slot1@vulture.cs.w LINUX      X86_64 Unclaimed Idle      0.000  679  1+03:18:58\n"
    assert table.row_line(SLOT_COLUMNS, busy[0]) == \
        "slot1_1@vulture.cs LINUX      X86_64 Claimed   Busy      1.160 1152  0+00:00:00\n"
    assert slot_summary([slot] + busy).splitlines() == [
        "                         Machines Owner Claimed Unclaimed Matched Preempting  Drain",
        "",
        "            X86_64/LINUX        5     0       4         1       0          0      0",
        "",
        "                   Total        5     0       4         1       0          0      0"]


@pytest.mark.parametrize("options", [None, "j", ",", "V", "l", "r", "h"])
def test_autoformat_of_wire_ads_matches_autoformat_of_classads(options):
    from jobledger.eventcore.adwire import to_classad
    wire = [{"ClusterId": "7", "ProcId": "0", "Owner": '"wenger"', "Args": '"a \\"b\\" c"', "Flt": "1.5",
             "Flag": "true", "Expr": "ClusterId * 2", "lower": '"x"'},
            {"ClusterId": "7", "ProcId": "1", "Owner": "undefined"}]
    attrs = ["ClusterId", "Owner", "Args", "Flt", "Flag", "Expr", "Lower", "Nope", "ClusterId + 1"]
    fast, slow = AutoFormat(attrs, options, "condor_q"), AutoFormat(attrs, options, "condor_q")
    assert [fast.row_exprs(w) for w in wire] == [slow.row(to_classad(w)) for w in wire]


def test_history_reads_an_htcondor_history_file(tmp_path):
    from jobledger.condor_cli import history
    from tests.condor_cli.conftest import run
    ads = [("1", "0", '"alice"', "4"), ("2", "0", '"bob"', "3"), ("2", "1", '"bob"', "4")]
    (tmp_path / "history").write_text("".join(
        f"ClusterId = {c}\nProcId = {p}\nOwner = {o}\nJobStatus = {s}\nCmd = \"/bin/echo\"\n"
        f"*** ProcId = {p} ClusterId = {c} Owner = {o}\n" for c, p, o, s in ads))
    path = str(tmp_path / "history")
    assert run(history.main, "-file", path, "-af:j", "Owner").out == "2.1 bob\n2.0 bob\n1.0 alice\n"
    assert run(history.main, "-file", path, "bob", "-limit", "1", "-af:j", "JobStatus").out == "2.1 4\n"
    assert run(history.main, "-file", path, "-since", "2.0", "-af:j", "JobStatus").out == "2.1 4\n"
    assert run(history.main, "-file", path, "-constraint", "JobStatus == 3", "-json").out == \
        '[\n{\n  "ClusterId": 2,\n  "Cmd": "/bin/echo",\n  "JobStatus": 3,\n  "Owner": "bob",\n  "ProcId": 0\n}\n]\n'
    assert run(history.main, "-file", str(tmp_path / "none")).status == 1
