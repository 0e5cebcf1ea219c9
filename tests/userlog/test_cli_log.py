"""``jobledger log``: summary, JSON lines, conversion, follow, errors."""

from __future__ import annotations

import json

from click.testing import CliRunner

from jobledger.eventcore.codecs.userlog import read_events
from jobledger.eventcore.events import event_from_dict
from jobledger.cli import main


def run(*args):
    return CliRunner().invoke(main, ["log", *args])


def test_summary_per_job(oracle_dir):
    result = run(str(oracle_dir / "userlog" / "interleaved_multijob.log"))
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split()[:3] == ["Job", "Status", "Attempts"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert rows["2100.1"][:2] == ["2100.1", "Completed"] and rows["2100.1"][5] == "1"
    assert rows["2101.3"][1] == "Removed"
    assert rows["2101.2"][2] == "2"          # evicted once, ran twice


def test_json_lines_are_the_journal_payload(oracle_dir, utc):
    path = oracle_dir / "userlog" / "hold_release_remove.log"
    result = run("--json", str(path))
    assert result.exit_code == 0
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [event_from_dict(r) for r in records] == read_events(path.read_bytes())
    assert records[0]["type_name"] == "JOB_HELD" and records[1]["offset"] == 107


def test_convert_between_formats(oracle_dir, tmp_path, utc):
    path = oracle_dir / "userlog" / "lifecycle_basic.log"
    original = read_events(path.read_bytes())
    for fmt in ("xml", "json", "text"):
        result = run("--to", fmt, "--utc", str(path))
        assert result.exit_code == 0
        assert read_events(result.stdout.encode()) == original
    text = run("--to", "text", str(path)).stdout
    assert text == path.read_text()          # TZ=UTC: ISO local time = the original


def test_errors_name_the_file_and_offset(oracle_dir, tmp_path):
    result = run(str(oracle_dir / "userlog" / "malformed_events.log"))
    assert result.exit_code == 1
    assert "malformed_events.log: byte 155: ULOG_RD_ERROR" in result.stderr
    assert "5 unreadable event(s)" in result.stderr
    missing = run(str(tmp_path / "nope.log"))
    assert missing.exit_code == 1 and "nope.log" in missing.stderr


def test_follow_prints_events_as_they_are_written(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    from jobledger.eventcore.codecs.userlog import render
    from jobledger.eventcore.events import JobAbortedEvent

    log = tmp_path / "job.log"
    log.write_text(render(JobAbortedEvent(cluster=1, proc=0, timestamp=1709633472)))
    root = Path(__file__).resolve().parents[2]
    # Ctrl-C is what stops --follow: the child must not inherit an ignored SIGINT (a
    # suite run under nohup or as a background job of a script has it ignored, and a
    # Python child then never gets KeyboardInterrupt).  A handler is reset on exec.
    ignored = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        child = subprocess.Popen([sys.executable, "-m", "jobledger", "log", "--follow", "--json", str(log)],
                                 cwd=root, stdout=subprocess.PIPE, text=True)
    finally:
        signal.signal(signal.SIGINT, ignored)
    try:
        first = json.loads(child.stdout.readline())
        with open(log, "a") as f:
            f.write(render(JobAbortedEvent(cluster=1, proc=1, timestamp=1709633473)))
        second = json.loads(child.stdout.readline())
    finally:
        os.kill(child.pid, signal.SIGINT)
        child.wait(timeout=60)      # a hang guard: the exit takes ~60 ms of CPU
        child.stdout.close()
    assert (first["proc"], second["proc"]) == (0, 1)
    assert child.returncode == 130          # Ctrl-C, quietly, as every jobledger command
