"""Logs htcondor2 reads are read, imported and converted alike: a final event whose
``...`` has no newline, a conversion past an unreadable event, and ``str(event)`` of a
resources row with only an Allocated value."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from jobledger.daemons.client.importer import import_log
from jobledger.daemons.storage.store import Store
from jobledger.eventcore.codecs.userlog import read_events
from jobledger.cli import main
from jobledger.tracking.jobeventlog import JobEventLog

htcondor2 = pytest.importorskip("htcondor2")

SUBMIT = "000 (001.000.000) 2024-01-01 10:00:00 Job submitted from host: <1.2.3.4:5>\n...\n"
EXECUTE = "001 (001.000.000) 2024-01-01 10:00:05 Job executing on host: <1.2.3.4:6>\n..."
USAGE = "".join(f"\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  {w} Usage\n"
                for w in ("Run Remote", "Run Local", "Total Remote", "Total Local"))
BYTES = "".join(f"\t0  -  {w} By Job\n" for w in ("Run Bytes Sent", "Run Bytes Received",
                                                  "Total Bytes Sent", "Total Bytes Received"))
TERMINATED = ("005 (001.000.000) 2024-01-01 10:00:09 Job terminated.\n"
              "\t(1) Normal termination (return value 0)\n" + USAGE + BYTES +
              "\tPartitionable Resources :    Usage  Request Allocated \n"
              "\t   Cpus                 :                 1         1 \n"
              "\t   Disk (KB)            :       36        1   4098452 \n"
              "\t   GPUs                 :                           0 \n"
              "\t   Memory (MB)          :        1        1         1 \n...\n")


def theirs(path) -> list:
    return [(int(e.type), dict(e)) for e in htcondor2.JobEventLog(str(path)).events(0)]


@pytest.mark.oracle
def test_final_event_without_newline_is_read_and_imported(tmp_path):
    log = tmp_path / "nonl.log"
    log.write_text(SUBMIT + EXECUTE)
    assert [t for t, _ in theirs(log)] == [0, 1]
    assert [int(e.type) for e in read_events(log.read_bytes())] == [0, 1]
    with Store(tmp_path / "pool") as store:
        result = import_log(store, str(log))
        assert (result.events, result.added, result.garbled) == (2, 2, [])
        again = import_log(store, str(log))
        assert again.added == 0
        imported = [entry.record.event["type"] for entry in store.entries()
                    if getattr(entry.record, "event", None)]
        assert imported == [0, 1]


@pytest.mark.oracle
def test_str_of_a_resources_row_with_only_an_allocated_value(tmp_path):
    log = tmp_path / "gpus.log"
    log.write_text(TERMINATED)
    ours = next(iter(JobEventLog(str(log)).events(0)))
    real = next(iter(htcondor2.JobEventLog(str(log)).events(0)))
    assert "GPUs                 :                           0" in str(real)
    assert str(ours) == str(real)


@pytest.mark.oracle
@pytest.mark.parametrize("to", ["json", "xml", "text"])
def test_conversion_reports_an_unreadable_event_and_keeps_the_others(tmp_path, to):
    bad = ("040 (001.000.000) 2024-01-01 10:00:01 Started transferring input files \n"
           "\tTransferring to host: <1.2.3.4:6>\n...\n")
    log = tmp_path / "mixed.log"
    log.write_text(SUBMIT + bad + TERMINATED)
    # htcondor2 reads each good event, and refuses the one with the trailing space
    for n, text in enumerate((SUBMIT, TERMINATED)):
        one = tmp_path / f"one{n}.log"
        one.write_text(text)
        assert len(theirs(one)) == 1
    lone = tmp_path / "bad.log"
    lone.write_text(bad)
    with pytest.raises(htcondor2.HTCondorException):
        theirs(lone)
    result = CliRunner().invoke(main, ["log", "--to", to, str(log)])
    assert result.exit_code == 1
    assert "byte 79" in result.stderr and "1 unreadable event" in result.stderr
    converted = tmp_path / f"converted.{to}"
    converted.write_text(result.stdout)
    back = list(JobEventLog(str(converted)).events(0))
    assert [int(e.type) for e in back] == [0, 5]
    assert back[1]["GPUs"] == 0
