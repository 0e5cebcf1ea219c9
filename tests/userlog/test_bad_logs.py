"""User logs that are not what they claim (issue 11 item 8): ids beyond a C int,
bytes that are not UTF-8, /dev/zero, a FIFO nobody writes.  Each is a problem
named with the place, never a traceback, a MemoryError or a hang."""

from __future__ import annotations

import os
import resource

import pytest
from click.testing import CliRunner

import jobledger as htcondor
from jobledger.cli import main

GOOD = "000 (001.000.000) 2026-11-23 10:00:00 Job submitted from host: <127.0.0.1:9618>\n...\n"
HUGE_ID = GOOD.replace("(001.000.000)", f"({10**30}.000.000)")
BAD_HOST = GOOD.encode().replace(b"127.0.0.1:9618", b"127.0.0.1:\xff\xfe")


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def one_error_line(result, *words):
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    errors = [line for line in result.output.splitlines() if line.lower().startswith(("error", "warning"))]
    assert errors, result.output
    for word in words:
        assert word in result.output, result.output


@pytest.mark.parametrize("data, words", [
    (HUGE_ID.encode() + GOOD.encode(), ("beyond 9223372036854775807",)),
    (BAD_HOST + GOOD.encode(), ("not UTF-8",)),
])
def test_bad_events_are_named_and_the_rest_is_read(tmp_path, data, words):
    log = tmp_path / "jobs.log"
    log.write_bytes(data)
    with pytest.warns(UserWarning, match=words[0]):
        events = list(htcondor.JobEventLog(str(log)).events(0))
    assert [(e.cluster, e.proc) for e in events] == [(1, 0)]
    one_error_line(cli("log", log), *words)
    result = cli("journal", "import", log, "--local-dir", tmp_path / "pool")
    assert result.exit_code == 0 and words[0] in result.output, result.output
    assert "1 new" in result.output


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
def test_not_a_regular_file_is_refused_without_waiting(tmp_path, kind):
    path = str(tmp_path / "fifo") if kind == "fifo" else kind
    if kind == "fifo":
        os.mkfifo(path)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(htcondor.HTCondorException, match="not a regular file"):
        htcondor.JobEventLog(path).events(0)
    one_error_line(cli("log", path), "not a regular file")
    one_error_line(cli("journal", "import", path, "--local-dir", tmp_path / "pool"), "not a regular file")
    assert (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024 < 100


def test_an_endless_record_is_not_read_into_memory_without_bound(tmp_path, monkeypatch):
    import jobledger.tracking.jobeventlog as jel
    monkeypatch.setattr(jel, "MAX_RECORD_BYTES", 1 << 20)
    monkeypatch.setattr(jel, "_CHUNK", 64 << 10)
    log = tmp_path / "jobs.log"
    log.write_bytes(GOOD.encode() + b"000 (002.000.000) 2026-11-23 10:00:00 " + b"x" * (3 << 20))
    with pytest.warns(UserWarning, match="longer than 1048576 bytes"):
        events = list(jel.JobEventLog(str(log)).events(0))
    assert [e.cluster for e in events] == [1]
