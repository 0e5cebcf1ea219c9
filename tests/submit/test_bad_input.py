"""Bad submit input gets one line naming the place, never a traceback or a MemoryError
(issue 11 item 6): bytes that are not UTF-8 text, huge sizes, /dev/zero, FIFOs,
MAX_JOBS_PER_SUBMISSION, and the statements condor_submit refuses."""

from __future__ import annotations

import os
import resource

import pytest
from click.testing import CliRunner

from jobledger.daemons.client.submit import Submit
from jobledger.eventcore.errors import SubmitError
from jobledger.eventcore.submit.text import MAX_LINE_CHARS, decode_bytes
from jobledger.cli import main

HEAD = b"executable = /bin/true\n"


def submit(tmp_path, monkeypatch, data: bytes, *args: str, name: str = "job.sub"):
    monkeypatch.chdir(tmp_path)
    (tmp_path / name).write_bytes(data)
    return CliRunner().invoke(main, ["submit", name, "--dry-run", *args])


def one_line_error(result, *words: str) -> str:
    """The CLI failed with exactly one line that holds ``words``."""
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    for word in words:
        assert word in lines[0], result.output
    return lines[0]


@pytest.mark.parametrize("data, words", [
    (HEAD + b"arguments = \xff\xfe\nqueue\n", ("job.sub:2:", "not UTF-8", "0xff")),
    (b"\xff\xfee\x00x\x00", ("job.sub:1:", "UTF-16")),
    (b"\x00\x00\xfe\xff", ("job.sub:1:", "UTF-32")),
    (HEAD + b"arguments = a\x00b\nqueue\n", ("job.sub:2:", "NUL byte")),
    (HEAD + b"arguments = \xe2\x82", ("job.sub:2:", "not UTF-8")),
    (HEAD + b"arguments = " + b"a" * (MAX_LINE_CHARS + 1) + b"\nqueue\n", ("job.sub:2:", "longer than")),
])
def test_bytes_that_are_not_utf8_text(tmp_path, monkeypatch, data, words):
    one_line_error(submit(tmp_path, monkeypatch, data), *words)


def test_utf8_byte_order_mark_is_dropped(tmp_path, monkeypatch):
    result = submit(tmp_path, monkeypatch, b"\xef\xbb\xbf" + HEAD + b"queue\n")
    assert result.exit_code == 0, result.output


def test_a_50_mb_line_is_refused_in_bounded_memory(tmp_path):
    data = HEAD + b"arguments = " + b"x" * 50_000_000 + b"\nqueue\n"
    with pytest.raises(SubmitError, match="line longer than") as caught:
        decode_bytes(data, "big.sub")
    assert caught.value.line == 2


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_devices_as_the_file_or_an_include(tmp_path, monkeypatch, device):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    one_line_error(CliRunner().invoke(main, ["submit", device, "--dry-run"]), device)
    result = submit(tmp_path, monkeypatch, HEAD + f"include : {device}\nqueue\n".encode())
    one_line_error(result, device)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 200, f"peak RSS grew {grown_mb:.0f} MB"


def test_a_fifo_nobody_writes_is_refused_not_waited_on(tmp_path, monkeypatch):
    os.mkfifo(tmp_path / "fifo")
    one_line_error(submit(tmp_path, monkeypatch, HEAD + b"include : fifo\nqueue\n"), "not a regular file")
    one_line_error(submit(tmp_path, monkeypatch, HEAD + b"queue x from fifo\n"), "not a regular file")
    one_line_error(CliRunner().invoke(main, ["submit", str(tmp_path / "fifo"), "--dry-run"]),
                   "not a regular file")


def test_stdin_is_checked_too(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["submit", "-", "--dry-run"], input=HEAD + b"x = \xc3(\nqueue\n")
    one_line_error(result, "<stdin>:2:", "not UTF-8")


LIMIT = "MAX_JOBS_PER_SUBMISSION (20000)"


@pytest.mark.parametrize("queue", ["queue 1e6", "queue 1000000", "queue 20001", "queue 2 x in (a b)"])
def test_max_jobs_per_submission(tmp_path, monkeypatch, queue):
    text = HEAD + queue.encode() + b"\n"
    if queue.endswith("(a b)"):
        monkeypatch.setenv("_CONDOR_MAX_JOBS_PER_SUBMISSION", "3")
        from jobledger.daemons.config_files import reload_config
        reload_config()
        try:
            one_line_error(submit(tmp_path, monkeypatch, text), "MAX_JOBS_PER_SUBMISSION (3)")
        finally:
            monkeypatch.delenv("_CONDOR_MAX_JOBS_PER_SUBMISSION")
            reload_config()
        return
    one_line_error(submit(tmp_path, monkeypatch, text), "job.sub:2:", "Failed to create proc", LIMIT)


def test_a_million_line_item_file_fails_before_it_is_split(tmp_path, monkeypatch):
    (tmp_path / "items.txt").write_text("".join(f"{i}\n" for i in range(1_000_000)))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = submit(tmp_path, monkeypatch, HEAD + b"arguments = $(x)\nqueue x from items.txt\n")
    one_line_error(result, LIMIT)
    assert (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024 < 150
    # a slice that selects few rows of the big file is fine
    result = submit(tmp_path, monkeypatch, HEAD + b"arguments = $(x)\nqueue x from [:3] items.txt\n")
    assert result.exit_code == 0, result.output
    assert result.output.count("ProcId = ") == 3


def test_the_limit_is_exact(tmp_path):
    sub = Submit("executable = /bin/true\nqueue 5\n")
    assert sub.cluster(max_jobs=5).num_procs == 5
    with pytest.raises(SubmitError, match=r"MAX_JOBS_PER_SUBMISSION \(4\)"):
        sub.cluster(max_jobs=4)


@pytest.mark.parametrize("text, words", [
    ("arguments = $(Foo\nqueue\n", ("job.sub:2:", "unclosed macro reference", "$(Foo")),
    ("if true\nqueue\n", ("job.sub:3:", "endif(s) not found before end-of-file")),
    ("if true\n  if false\n  endif\nqueue\n", ("endif(s) not found",)),
    ("queue in in in (\n", ("job.sub:2:", "no ')' closes the item list")),
    ("queue x from (\na\nb\n", ("no ')' closes the item list",)),
])
def test_statements_condor_submit_refuses(tmp_path, monkeypatch, text, words):
    one_line_error(submit(tmp_path, monkeypatch, HEAD + text.encode()), *words)


def test_the_same_statements_closed_are_fine(tmp_path, monkeypatch):
    for text in ("arguments = $(Foo)\nqueue\n", "if true\nqueue\nendif\n", "queue in in (in)\n"):
        result = submit(tmp_path, monkeypatch, HEAD + text.encode())
        assert result.exit_code == 0, (text, result.output)


def test_htcondor2_compatible_object_stays_lenient():
    # htcondor2.Submit accepts these texts; only building jobs refuses them
    sub = Submit("arguments = $(Foo\nif true\nqueue in in in (\n")
    assert sub["arguments"] == "$(Foo" and sub.getQArgs() == "in in in ("
