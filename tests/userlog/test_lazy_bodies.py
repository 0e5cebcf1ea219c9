"""Bodies read on first use (005, 006): still checked where they stand, read the same when used."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from eventcore.codecs.userlog import Garbled, Parsed, TextReaderState, scan
from eventcore.codecs.userlog_text_bodies import Deferred, parse_body
from eventcore.codecs.userlog_text_read import _parse_header
from eventcore.errors import UserLogReadError
from tracking.jobeventlog import JobEventLog

ORACLE = Path(__file__).resolve().parents[3] / "shared" / "oracle" / "userlog"
GOOD = ("000 (7.000.000) 2024-03-09 16:00:00 Job submitted from host: <10.0.0.2:9618>\n...\n")
BAD_IMAGE = ("006 (7.000.000) 2024-03-09 16:00:01 Image size of job updated: lots\n"
             "\t1  -  MemoryUsage of job (MB)\n...\n")
BAD_TERMINATION = ("005 (7.000.000) 2024-03-09 16:00:02 Job terminated.\n"
                   "\t(1) Normal termination (signal 9)\n"
                   "\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Remote Usage\n...\n")
BAD_USAGE = ("005 (7.000.000) 2024-03-09 16:00:03 Job terminated.\n"
             "\t(1) Normal termination (return value 0)\n\t\tUsr zero  -  Run Remote Usage\n...\n")


def _eager(item) -> dict:
    nl = item.text.find("\n")
    _, first = _parse_header(item.text, 0, nl, TextReaderState())
    lines = [line.rstrip("\r") for line in item.text[nl + 1:].split("\n")[:-2]]   # no '...'
    return parse_body(item.header.number, first, lines)[0]


@pytest.mark.parametrize("name", sorted(p.name for p in ORACLE.glob("*.log")))
def test_bodies_read_on_first_use_equal_bodies_read_at_once(name):
    items, _ = scan("text", (ORACLE / name).read_bytes(), 0, TextReaderState())
    parsed = [i for i in items if isinstance(i, Parsed)]
    deferred = [p for p in parsed if type(tuple.__getitem__(p, 1)) is Deferred]
    assert {p.header.number for p in deferred} <= {5, 6}
    assert deferred or name != "big_10000.log"
    for p in parsed:
        assert p.attrs == _eager(p) and list(p.attrs) == list(_eager(p))


@pytest.mark.parametrize("bad", [BAD_IMAGE, BAD_TERMINATION, BAD_USAGE])
def test_an_unreadable_body_is_reported_where_it_stands(bad, tmp_path):
    data = (GOOD + bad + GOOD).encode()
    items, end = scan("text", data, 0, TextReaderState())
    assert [type(i) for i in items] == [Parsed, Garbled, Parsed] and end == len(data)
    assert (items[1].offset, items[1].end) == (len(GOOD), len(GOOD) + len(bad))

    log = tmp_path / "job.log"
    log.write_bytes(data)
    jel = JobEventLog(str(log), errors="raise").events(0)
    assert next(jel).offset == 0
    with pytest.raises(UserLogReadError) as caught:
        next(jel)
    assert caught.value.offset == len(GOOD)
    assert next(jel).offset == len(GOOD) + len(bad)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert [e.offset for e in JobEventLog(str(log)).events(0)] == [0, len(GOOD) + len(bad)]
