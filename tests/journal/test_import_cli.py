"""jobledger journal import / replay / audit / export on the oracle user logs."""

from __future__ import annotations

import json
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from jobledger.daemons.storage.store import Store
from jobledger.eventcore.status import JobStatus, implied_status
from jobledger.cli import main

from tests.journal.schema_check import check_row

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def logs(oracle_dir):
    found = sorted((oracle_dir / "userlog").glob("*.log"))
    return [str(p) for p in found if p.name != "not_a_log.log"]


def expected_states(oracle_dir) -> dict:
    """Each job's status as its events imply (userlog.md section 1 guidance), from the oracle."""
    out = {}
    for f in sorted((oracle_dir / "userlog").glob("*.json")):
        if f.name == "manifest.json":
            continue
        for r in json.loads(f.read_text()):
            if "type" not in r or r["cluster"] < 0 or r["proc"] < 0 or r["type"] >= 100:
                continue
            key = (r["cluster"], r["proc"])
            status = implied_status(r["type"])
            out[key] = int(status if status is not None else out.get(key, JobStatus.IDLE))
    return out


def run(*args, ok=True):
    result = CliRunner().invoke(main, [str(a) for a in args])
    if ok:
        assert result.exit_code == 0, (result.output, result.stderr, result.exception)
    return result


def replayed(local):
    out = run("replay", "--local-dir", local, "--json").stdout
    return {(j["cluster"], j["proc"]): j["JobStatus"] for j in map(json.loads, out.splitlines())}


def test_import_in_any_order_twice_replays_and_audits(tmp_path, logs, oracle_dir):
    local = tmp_path / "pool"
    shuffled = list(logs)
    random.Random(3).shuffle(shuffled)
    run("journal", "import", *shuffled, "--local-dir", local)
    store = Store(local)
    head = store.head()
    rows = list(store.rows())
    store.close()
    for row in rows:
        check_row(row)
    run("journal", "import", *reversed(shuffled), "--local-dir", local)
    store = Store(local)
    assert store.head() == head
    store.close()
    assert replayed(local) == expected_states(oracle_dir)
    result = run("audit", "--local-dir", local, "--json")
    report = json.loads(result.stdout)
    assert report["ok"] and report["findings"] == []
    assert report["counts"]["jobs"] == len(expected_states(oracle_dir))


def test_not_a_log_is_an_error_naming_the_file(tmp_path, oracle_dir):
    bad = oracle_dir / "userlog" / "not_a_log.log"
    result = run("journal", "import", bad, "--local-dir", tmp_path / "p", ok=False)
    assert result.exit_code == 1
    assert "not_a_log.log at byte 0: not a job event log" in result.stderr


def _import_process(logs, local):
    return subprocess.Popen([sys.executable, "-m", "jobledger", "journal", "import", *logs,
                             "--local-dir", str(local), "--batch", "300"], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _head(local) -> int:
    try:
        conn = sqlite3.connect(f"file:{local}/journal.sqlite?mode=ro", uri=True, timeout=5)
        try:
            return conn.execute("SELECT coalesce(max(position), 0) FROM journal").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.OperationalError:
        return 0


@pytest.mark.slow
def test_import_killed_then_repeated_adds_each_event_once(tmp_path, logs, oracle_dir):
    reference = tmp_path / "ref"
    run("journal", "import", *logs, "--local-dir", reference)
    store = Store(reference)
    want = [(r.cluster, r.proc, r.type, r.payload) for r in store.rows()]
    store.close()
    big_first = sorted(logs, key=lambda p: "big_10000" not in p)
    rnd = random.Random(11)
    for trial in range(3):
        local = tmp_path / f"t{trial}"
        proc = _import_process(big_first, local)
        threshold = rnd.randint(1, len(want) - 1000)
        while _head(local) < threshold and proc.poll() is None:
            time.sleep(0.005)
        time.sleep(rnd.random() * 0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert 0 < _head(local) < len(want), "the kill should land mid-import"
        run("journal", "import", *big_first, "--local-dir", local)
        store = Store(local)
        got = [(r.cluster, r.proc, r.type, r.payload) for r in store.rows()]
        store.close()
        assert sorted(got) == sorted(want)
        assert len(got) == len(set(map(repr, got)))
        assert replayed(local) == expected_states(oracle_dir)


def test_audit_reports_a_hand_edited_log(tmp_path, oracle_dir):
    log = tmp_path / "lifecycle.log"
    shutil.copy(oracle_dir / "userlog" / "lifecycle_basic.log", log)
    local = tmp_path / "pool"
    run("journal", "import", log, "--local-dir", local)
    run("audit", "--local-dir", local)
    data = log.read_bytes()
    at = data.index(b"return value 0")
    log.write_bytes(data[:at] + b"return value 1" + data[at + 14:])
    event_start = data.rindex(b"\n...\n", 0, at) + 5
    result = run("audit", "--local-dir", local, ok=False)
    assert result.exit_code == 1
    lines = [l for l in result.output.splitlines() if l.startswith("[source]")]
    assert len(lines) == 1, result.output
    assert f"file {log} byte {event_start}:" in lines[0] and "job 101.0" in lines[0]


def test_audit_reports_a_flipped_byte_with_its_position(tmp_path, oracle_dir):
    local = tmp_path / "pool"
    run("journal", "import", oracle_dir / "userlog" / "hold_release_remove.log", "--local-dir", local)
    conn = sqlite3.connect(local / "journal.sqlite")
    payload = conn.execute("SELECT payload FROM journal WHERE position = 4").fetchone()[0]
    i = payload.index('"timestamp":') + len('"timestamp":')
    flipped = payload[:i] + ("1" if payload[i] != "1" else "2") + payload[i + 1:]
    conn.execute("UPDATE journal SET payload = ? WHERE position = 4", (flipped,))
    conn.commit()
    conn.close()
    result = run("audit", "--local-dir", local, "--json", ok=False)
    report = json.loads(result.stdout)
    assert not report["ok"]
    found = [(f["kind"], f["position"]) for f in report["findings"]]
    assert found[0] == ("checksum", 4)
    # the changed record also changed what the queue should be: that is reported too
    assert all(kind == "queue" for kind, _ in found[1:])


def test_replay_at_a_position_and_a_moment(tmp_path, oracle_dir, utc):
    local = tmp_path / "pool"
    run("journal", "import", oracle_dir / "userlog" / "lifecycle_basic.log", "--local-dir", local)
    events = [r for r in json.loads((oracle_dir / "userlog" / "lifecycle_basic.json").read_text())]
    full = replayed(local)
    assert full == {(101, 0): 4}
    out = run("replay", "--local-dir", local, "--json", "--position", 3).stdout
    assert [json.loads(l)["JobStatus"] for l in out.splitlines()] == [1]
    execute = next(e for e in events if e["type"] == 1)
    out = run("replay", "--local-dir", local, "--json", "--as-of", execute["timestamp"]).stdout
    assert [json.loads(l)["JobStatus"] for l in out.splitlines()] == [2]
    out = run("replay", "--local-dir", local, "--as-of", "2000-01-01T00:00:00").output
    assert "0 jobs" in out
    text = run("replay", "--local-dir", local).output
    assert text.splitlines()[0].split()[:4] == ["ID", "OWNER", "SUBMITTED", "ST"]
    assert " C " in text.splitlines()[1]
    assert run("replay", "--local-dir", local, "--position", 1, "--as-of", 5, ok=False).exit_code == 2


def test_missing_journal_is_a_clear_error(tmp_path):
    for args in (["replay"], ["audit"], ["journal", "export"]):
        result = run(*args, "--local-dir", tmp_path / "none", ok=False)
        assert result.exit_code == 1 and "journal" in result.stderr


@pytest.mark.parametrize("fmt", ["text", "json", "xml"])
def test_export_reads_back_as_the_same_events(tmp_path, oracle_dir, fmt):
    from jobledger.eventcore.codecs.userlog import read_events
    from jobledger.eventcore.events import event_to_dict
    local = tmp_path / "pool"
    run("journal", "import", oracle_dir / "userlog" / "lifecycle_basic.log",
        oracle_dir / "userlog" / "hold_release_remove.log", "--local-dir", local)
    out = run("journal", "export", "--local-dir", local, "--format", fmt, "--utc").stdout
    back = read_events(out.encode())
    store = Store(local)
    want = [e.payload["event"] for e in store.entries()]
    store.close()
    got = [event_to_dict(e) for e in back]
    assert [(g["type"], g["cluster"], g["proc"], g["timestamp"]) for g in got] == [
        (w["type"], w["cluster"], w["proc"], w["timestamp"]) for w in want]
    if fmt == "text":
        assert [g["attrs"] for g in got] == [w["attrs"] for w in want]


def test_a_byte_flipped_in_the_database_file_is_found(tmp_path, oracle_dir):
    local = tmp_path / "pool"
    run("journal", "import", oracle_dir / "userlog" / "hold_release_remove.log", "--local-dir", local)
    store = Store(local)
    rows = list(store.rows())
    store.close()                      # the last connection: WAL checkpointed into the file
    target = next(r for r in rows if '"HoldReason":"' in r.payload)
    needle = target.payload.encode()
    db = local / "journal.sqlite"
    data = bytearray(db.read_bytes())
    at = data.find(needle)
    assert at > 0 and data.find(needle, at + 1) < 0
    flip = at + needle.index(b'"HoldReason":"') + len(b'"HoldReason":"')
    data[flip] ^= 0x01                 # one bit of one letter of the hold reason
    db.write_bytes(bytes(data))
    result = run("audit", "--local-dir", local, ok=False)
    assert result.exit_code == 1
    first = result.stdout.splitlines()[0]
    job = f"{target.cluster}.{target.proc}"
    assert first.startswith(f"[checksum] position {target.position} job {job} file {db}:")
    assert "checksum mismatch" in first


def test_a_database_sqlite_cannot_read_is_a_clear_error(tmp_path, oracle_dir):
    local = tmp_path / "pool"
    run("journal", "import", oracle_dir / "userlog" / "lifecycle_basic.log", "--local-dir", local)
    db = local / "journal.sqlite"
    data = bytearray(db.read_bytes())
    data[:16] = b"not a database!!"
    db.write_bytes(bytes(data))
    result = run("audit", "--local-dir", local, ok=False)
    assert result.exit_code == 1
    assert f"Error: {db}: the database file cannot be read" in result.stderr


def test_a_growing_log_imported_again_adds_only_the_new_events(tmp_path, oracle_dir):
    full = (oracle_dir / "userlog" / "lifecycle_basic.log").read_bytes()
    log = tmp_path / "growing.log"
    cut = full.index(b"\n...\n", len(full) // 2) + 5 + 30      # mid-way into an event
    log.write_bytes(full[:cut])
    local = tmp_path / "pool"
    first = run("journal", "import", log, "--local-dir", local).stdout
    log.write_bytes(full)
    second = run("journal", "import", log, "--local-dir", local).stdout
    n_first = int(first.split(": ")[1].split()[0])
    assert 0 < n_first < 10
    assert f"10 events, {10 - n_first} new" in second
    store = Store(local)
    assert store.head() == 10
    store.close()
    assert run("audit", "--local-dir", local).exit_code == 0


def test_queue_log_export(tmp_path):
    from tests.journal.helpers import event, submit
    from jobledger.eventcore.ids import JobId
    local = tmp_path / "pool"
    store = Store(local)
    store.append(submit(3, 2), time=1_700_000_000.5)
    store.append([event(JobId(3, 1), 1)])
    store.close()
    text = run("journal", "queue-log", "--local-dir", local).stdout
    lines = text.splitlines()
    assert lines[0] == "107 1 CreationTimestamp 1700000000"
    assert lines[1:3] == ["101 0.0 Job Machine", "103 0.0 NextClusterNum 4"]
    assert "101 03.-1 Job Machine" in lines and '103 03.-1 Owner "alice"' in lines
    assert "103 3.1 JobStatus 2" in lines and "103 3.0 JobStatus 1" in lines
    earlier = run("journal", "queue-log", "--local-dir", local, "--position", 3).stdout
    assert "101 3.1 Job Machine" not in earlier and "101 3.0 Job Machine" in earlier


def test_status_diagram_command():
    from jobledger.eventcore.status import state_diagram
    assert run("journal", "status-diagram").stdout == state_diagram() + "\n"
