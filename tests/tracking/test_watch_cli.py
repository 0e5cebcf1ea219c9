"""``jobledger watch``: JSON states of real HTCondor logs, exits, the table."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from jobledger.cli import main
from tests.tracking.workload import T0, Step, event_text
from jobledger.eventcore.ids import JobId

RUN_ONLY = {4, 7, 24}           # an instance leaving: only means something when running
IMPLIES = {0: 1, 1: 2, 5: 4, 9: 3, 12: 5, 13: 1, 10: 7, 11: 2, 4: 1, 7: 1, 24: 1}


def implied_states(records):
    """Each job's state from the oracle's event records, by the userlog.md guidance."""
    states = {}
    for r in records:
        if "outcome" in r or r["cluster"] < 0 or r["proc"] < 0 or r["type"] >= 100:
            continue
        job, number, attrs = (r["cluster"], r["proc"]), r["type"], r["attrs"]
        status = states.get(job, {}).get("JobStatus")
        if number not in IMPLIES or status in (3, 4):
            states.setdefault(job, {"JobStatus": IMPLIES.get(number, 1)})
            continue
        if number in RUN_ONLY and status not in (None, 2, 7):
            continue
        new = {"JobStatus": IMPLIES[number]}
        if number == 5 or (number == 4 and attrs.get("TerminatedAndRequeued")):
            new["ExitCode" if attrs.get("TerminatedNormally") else "ExitSignal"] = (
                attrs.get("ReturnValue") if attrs.get("TerminatedNormally")
                else attrs.get("TerminatedBySignal"))
        if number == 12:
            new["HoldReasonCode"] = attrs.get("HoldReasonCode", 0)
        states[job] = new
    return states


def cases(oracle_dir):
    manifest = json.loads((oracle_dir / "userlog" / "manifest.json").read_text())
    names = [c["name"] if isinstance(c, dict) else c for c in manifest["cases"]]
    return sorted(names)


def test_json_gives_each_job_the_state_its_events_imply(oracle_dir):
    runner = CliRunner()
    checked = 0
    for name in cases(oracle_dir):
        log = oracle_dir / "userlog" / f"{name}.log"
        records = json.loads((oracle_dir / "userlog" / f"{name}.json").read_text())
        result = runner.invoke(main, ["watch", "--log", str(log), "--json"])
        assert result.exit_code == 0, (name, result.output)
        got = {}
        for line in result.stdout.splitlines():
            ad = json.loads(line)
            got[(ad["cluster"], ad["proc"])] = {k: ad[k] for k in
                                                ("JobStatus", "ExitCode", "ExitSignal", "HoldReasonCode")
                                                if k in ad}
        expected = implied_states(records)
        assert got == expected, name
        checked += len(expected)
    assert checked > 1250          # big_10000's jobs and the small cases


def text(number, cluster, proc, t, **attrs):
    return event_text(Step(t, JobId(cluster, proc), number, attrs)).encode()


@pytest.fixture
def log(tmp_path):
    path = tmp_path / "jobs.log"
    path.write_bytes(text(0, 5, 0, T0) + text(0, 5, 1, T0) + text(1, 5, 0, T0 + 1, SlotName="s1")
                     + text(5, 5, 0, T0 + 2, TerminatedNormally=True, ReturnValue=3)
                     + text(12, 5, 1, T0 + 3, HoldReason="no", HoldReasonCode=21, HoldReasonSubCode=0)
                     + text(0, 6, 0, T0 + 4))
    return path


def test_exit_conditions(log):
    runner = CliRunner()
    held = runner.invoke(main, ["watch", "--log", str(log), "--exit", "any-held", "--timeout", "10"])
    assert held.exit_code == 0 and "5.0-1" in held.output
    failed = runner.invoke(main, ["watch", "5", "--log", str(log), "--exit", "any-failed", "--json",
                                  "--timeout", "10"])
    assert failed.exit_code == 0
    assert [json.loads(l)["proc"] for l in failed.stdout.splitlines()] == [0, 1]
    never = runner.invoke(main, ["watch", "6.0", "--log", str(log), "--exit", "all-done",
                                 "--timeout", "0.5", "--refresh", "0.1"])
    assert never.exit_code == 2 and "did not happen" in never.output


def test_job_selection_and_bad_job(log):
    runner = CliRunner()
    one = runner.invoke(main, ["watch", "5.1", "--log", str(log), "--json"])
    assert [(d["cluster"], d["proc"], d["JobStatus"], d["HoldReasonCode"])
            for d in map(json.loads, one.stdout.splitlines())] == [(5, 1, 5, 21)]
    bad = runner.invoke(main, ["watch", "five", "--log", str(log), "--json"])
    assert bad.exit_code == 2 and "CLUSTER.PROC" in bad.output


def test_table_has_a_line_and_progress_bar_per_batch(log):
    result = CliRunner().invoke(main, ["watch", "--log", str(log), "--exit", "any-held",
                                       "--timeout", "10"])
    lines = result.output.splitlines()
    assert lines[0].split()[:6] == ["BATCH", "IDLE", "RUN", "HOLD", "DONE", "TOTAL"]
    assert lines[1].split()[:6] == ["5", "0", "0", "1", "1", "2"]
    assert "[##########!!!!!!!!!!]  50%" in lines[1]
    assert lines[2].split()[:6] == ["6", "1", "0", "0", "0", "1"]
    assert lines[-1] == "3 jobs"


def test_journal_source(tmp_path):
    from jobledger.daemons.storage.store import Store
    from tests.tracking.workload import journal_records, workload
    load = workload(30, seed=3)
    store = Store(tmp_path / "pool", durability="normal")
    for group in journal_records(load):
        store.append(group)
    store.close()
    result = CliRunner().invoke(main, ["watch", "--journal", str(tmp_path / "pool" / "journal.sqlite"),
                                       "--json"])
    got = {JobId(d["cluster"], d["proc"]): d["JobStatus"] for d in map(json.loads, result.stdout.splitlines())}
    assert got == {j: f.status for j, f in load.finals.items()}


def test_anomalies_are_reported_on_stderr(tmp_path):
    path = tmp_path / "odd.log"
    path.write_bytes(text(0, 7, 0, T0) + text(0, 7, 0, T0) + text(1, 7, 1, T0 + 1, SlotName="s"))
    result = CliRunner().invoke(main, ["watch", "--log", str(path), "--json"])
    assert result.exit_code == 0
    assert [json.loads(l)["proc"] for l in result.stdout.splitlines()] == [0, 1]
    assert result.stderr.strip() == "log anomalies: duplicate 1, no_submit 1"


def test_missing_log_is_an_error_when_reading_once(tmp_path):
    result = CliRunner().invoke(main, ["watch", "--log", str(tmp_path / "nope.log"), "--json"])
    assert result.exit_code == 1 and "no such user log" in result.output and "nope.log" in result.output


def test_ctrl_c_while_waiting_for_exit_leaves_quietly_with_130(tmp_path):
    """Ctrl-C during ``watch --exit all-done`` (a job that never ends): nothing on stderr,
    exit status 130 -- not a timeout's message and status 2."""
    import os
    import signal
    import subprocess
    import sys
    path = tmp_path / "idle.log"
    path.write_bytes(text(0, 7, 0, T0))              # submitted, never run
    # the child must not inherit an ignored SIGINT (a suite run in the background has it)
    ignored = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        child = subprocess.Popen([sys.executable, "-m", "jobledger", "watch", "--log", str(path),
                                  "--exit", "all-done"], cwd=tmp_path, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
    finally:
        signal.signal(signal.SIGINT, ignored)
    try:
        header = child.stdout.readline()        # the table is up: the watch is following
        assert header.split()[:2] == ["BATCH", "IDLE"], header
        os.kill(child.pid, signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert (child.returncode, err) == (130, ""), (child.returncode, err)
    assert "did not happen" not in out
