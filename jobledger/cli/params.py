"""Argument types the commands share, checked before anything runs.

A bad argument is a one-line usage error naming the option: a job id that
is not ``CLUSTER`` or ``CLUSTER.PROC`` within HTCondor's id range, a
constraint that is not a ClassAd expression, a position or a moment out of
range.  ``one_line`` turns any of our errors into the single line the CLI
prints (``jobledger.cli.Main`` uses it for errors raised while running).
"""

from __future__ import annotations

import datetime
import math

import click

MAX_ID = 2**31 - 1          # cluster and proc ids are C ints in HTCondor
MAX_POSITION = 2**63 - 1    # a journal position is an SQLite INTEGER
MAX_SHOWN = 300             # characters of an error line


def one_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message, shortened to ``MAX_SHOWN`` characters."""
    text = str(exc).strip().splitlines()
    line = text[0] if text else type(exc).__name__
    if len(line) <= MAX_SHOWN:
        return line
    half = MAX_SHOWN // 2           # keep both ends: the place and the reason
    return f"{line[:half]}...{line[-half:]}"


def check_job_id(text: str, hint: str = "JOB") -> str:
    """``text`` if it is ``CLUSTER`` or ``CLUSTER.PROC`` (ids 0..2**31-1), else a usage error."""
    cluster, dot, proc = text.partition(".")
    ok = cluster.isdigit() and cluster.isascii() and (not dot or (proc.isdigit() and proc.isascii()))
    if not ok or int(cluster) > MAX_ID or (dot and int(proc) > MAX_ID):
        shown = text if len(text) <= 40 else text[:40] + "..."
        raise click.BadParameter(f"{shown!r} is not a job id (CLUSTER or CLUSTER.PROC, "
                                 f"each at most {MAX_ID})", param_hint=hint)
    return text


class ConstraintType(click.ParamType):
    """A ClassAd expression, parsed here so a bad one never reaches the schedd."""

    name = "constraint"

    def convert(self, value, param, ctx):
        from jobledger.condor_cli.args import constraint_problem
        problem = constraint_problem(value)
        if problem:
            self.fail(f"not a ClassAd expression: {problem}", param, ctx)
        return value


class MomentType(click.ParamType):
    """A moment: Unix seconds (finite, within the years 1..9999) or ISO-8601."""

    name = "moment"

    def convert(self, value, param, ctx):
        if isinstance(value, (int, float)):
            value = str(value)
        try:
            seconds = float(value)
        except ValueError:
            try:
                moment = datetime.datetime.fromisoformat(value)
            except ValueError:
                self.fail(f"{value!r} is neither Unix seconds nor an ISO-8601 time", param, ctx)
            if moment.tzinfo is None:
                moment = moment.astimezone()
            return moment.timestamp()
        if not math.isfinite(seconds):
            self.fail(f"{value!r} is not a finite number of seconds", param, ctx)
        try:
            datetime.datetime.fromtimestamp(seconds)
        except (OverflowError, OSError, ValueError):
            self.fail(f"{value!r} is out of range (years 1 to 9999)", param, ctx)
        return seconds


CONSTRAINT = ConstraintType()
MOMENT = MomentType()
POSITION = click.IntRange(0, MAX_POSITION)


class SecondsType(click.ParamType):
    """A duration in seconds: finite, more than 0, at most a year."""

    name = "seconds"
    LONGEST = 365 * 86400.0

    def convert(self, value, param, ctx):
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        if not (0 < seconds <= self.LONGEST):
            self.fail(f"{value!r} must be more than 0 and at most {self.LONGEST:.0f} seconds", param, ctx)
        return seconds


SECONDS = SecondsType()
