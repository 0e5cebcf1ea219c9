"""Bad command-line arguments are one-line errors naming the option, never a
traceback or a hang (issue 11 item 9).  No pool is needed: arguments are
checked before anything is contacted."""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner

from jobledger.cli import main

HUGE = "99999999999999999999999"


def fails_in_one_line(args, *words, code=(1, 2)):
    result = CliRunner().invoke(main, args)
    assert result.exit_code in code, (args, result.output, result.exception)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    errors = [line for line in result.output.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1, result.output
    assert len(errors[0]) < 400
    for word in words:
        assert word in errors[0], result.output
    return errors[0]


@pytest.mark.parametrize("command", ["q", "rm", "hold", "release"])
def test_job_ids_out_of_range(tmp_path, command):
    fails_in_one_line([command, HUGE, "--local-dir", str(tmp_path)], "not a job id")
    fails_in_one_line([command, f"1.{HUGE}", "--local-dir", str(tmp_path)], "not a job id")
    fails_in_one_line([command, "1.²", "--local-dir", str(tmp_path)], "not a job id")


@pytest.mark.parametrize("command", ["q", "rm", "history"])
@pytest.mark.parametrize("constraint", ["((((", "(" * 45_000 + ")" * 45_000, "x == " + "1 +" * 30_000])
def test_bad_constraints(tmp_path, command, constraint):
    fails_in_one_line([command, "-constraint", constraint, "--local-dir", str(tmp_path)],
                      "not a ClassAd expression")


@pytest.mark.parametrize("args, words", [
    (["--position", "-1"], ("--position",)),
    (["--position", str(10**30)], ("--position",)),
    (["--as-of", "nan"], ("--as-of", "finite")),
    (["--as-of", "inf"], ("--as-of", "finite")),
    (["--as-of", "1e300"], ("--as-of", "out of range")),
    (["--as-of", "yesterday"], ("--as-of",)),
])
def test_replay_positions_and_moments(tmp_path, args, words):
    fails_in_one_line(["replay", "--local-dir", str(tmp_path), *args], *words)


@pytest.mark.parametrize("option", ["--refresh", "--timeout", "--poll-interval"])
@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "1e300"])
def test_watch_durations(tmp_path, option, value):
    fails_in_one_line(["watch", "--log", str(tmp_path / "x.log"), option, value], option)


def test_watch_journal_that_is_not_a_database(tmp_path):
    (tmp_path / "journal.sqlite").write_text("not a database\n" * 100)
    fails_in_one_line(["watch", "--journal", str(tmp_path / "journal.sqlite"), "--json"],
                      "journal.sqlite", "not a database")


def test_watch_job_ids(tmp_path):
    fails_in_one_line(["watch", "--log", str(tmp_path / "x.log"), HUGE], "not a job id")


@pytest.mark.parametrize("where", ["file/below", "/proc/1/impossible"])
def test_pool_start_on_an_impossible_path(tmp_path, where):
    (tmp_path / "file").write_text("")
    path = where if where.startswith("/") else str(tmp_path / where)
    fails_in_one_line(["pool", "start", "--local-dir", path], path)
    assert not os.path.exists(path)
