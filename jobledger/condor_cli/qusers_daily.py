"""``condor_qusers -daily[:rescale]``: the hourly and daily usage of each User (or Project)
record, laid out as HTCondor's tool lays it out (qusers.cpp ``process_daily_ads`` and its
print mask ``dailyStats_Projection``).

Each record gives a row with its name, then rows labelled by the span they cover, each a
ClassAd expression over the record's ``HourlyJobs*`` / ``DailyJobs*`` lists: ``last H hrs``
(the newest bucket; H the hours since the stats began while there is one bucket, else
how far into the bucket the schedd is), ``Last H hrs`` (the newest two buckets), ``Last N
hrs`` (all of today's buckets, once three buckets' time has passed), ``Yesterday`` and
``Day Before``.  A value that does not evaluate to a number is left blank.  Rows are sorted
by their key (the record's name; its span rows are the name plus ``_0``, ``_2`` ...), as the
tool's ``std::map`` holds them.  Every column is left-aligned, as wide as its heading or
its widest cell, columns one space apart, each line cut at the display width less one
(the terminal's, or 1024 when output is not a terminal; ``-wide``: not cut).
``:rescale`` divides the idle weight by the number of buckets the span covers.

With ``-af`` the tool prints the same rows through the ``-af`` columns, by position (its
print mask renders a row of values): the first column shows the row's name or label, the
second Launched, and so on; a cell with no value is empty.  The query then asks only for
what ``-af`` names (and ``User``, or ``Name`` with ``-projects``), as HTCondor's does: the
spans are computed from those attributes alone.
"""

from __future__ import annotations

import os
import time

from jobledger.eventcore.classad import ExprTree

__all__ = ["daily_lines", "daily_rows", "display_width", "HEADINGS"]

HEADINGS = ("Name", "Launched", "NoExec", "Requeued", "Held", "SlotHours", "IdleWeight")
_COUNTS = ("Launched", "FailedToStart", "Requeued", "Held")
_FORMATS = ("%d", "%d", "%d", "%d", "%.2f", "%.2f")
_HOURLY = [f"HourlyJobs{c}" for c in ("WeightedIdle", "SlotTime", *_COUNTS)]
_DAILY = [f"DailyJobs{c}" for c in ("WeightedIdle", "SlotTime", *_COUNTS)]


class _Info:
    """What the tool keeps across the ads (``_process_daily_ads_info``)."""

    def __init__(self, rescale: bool, now: float | None):
        self.start_time = 0
        self.unit_sec = 4 * 3600
        self.phase_sec = 0
        self.now = int(now) if now is not None else 0
        self.rescale = rescale
        self.rows: dict[str, list] = {}    # key -> [label, numbers (None: no number)]
        self.count = 0


def _number(ad, expr: str):
    try:
        value = ExprTree(expr).eval(ad)
    except Exception:
        return None
    if type(value) not in (int, float):     # not bool, nor Undefined or Error (int enums)
        return None
    return value


def _cell(value, fmt: str) -> str | None:
    if value is None:
        return None
    return fmt % (int(value) if fmt == "%d" else float(value))


def _long(ad, name: str, default: int) -> int:
    if name not in ad:
        return default
    value = _number(ad, name)
    return int(value) if value is not None else default


def _array_size(ad, names: list[str]) -> int:
    for name in names:
        if name in ad:
            value = ad.eval(name)
            if isinstance(value, list):
                return len(value)
    return 0


def _span_row(ad, label: str, exprs: list[str]) -> list:
    return [label, *(_number(ad, expr) for expr in exprs)]


def _key(ad, info: _Info) -> str:
    key = None
    for name in ("User", "Name"):
        if name in ad and isinstance(ad.eval(name), str):
            key = ad.eval(name)
            break
    if key is None:
        key = "%06d" % (info.count + 1)
    if key in info.rows:
        key += "%06d" % (info.count + 1)
    return key


def _add(info: _Info, ad) -> None:
    key = _key(ad, info)
    info.count += 1
    info.start_time = _long(ad, "HourlyStatsStartTime", info.start_time)
    info.unit_sec = _long(ad, "HourlyStatsUnitSize", info.unit_sec)
    info.phase_sec = _long(ad, "HourlyStatsUnitPhase", info.phase_sec)
    if not info.now:
        info.now = int(time.time())
    info.rows[key] = [key]
    hours_n, unit, since = _array_size(ad, _HOURLY), info.unit_sec, info.now - info.start_time

    def idle(expr: str, hrs: float) -> str:
        if info.rescale:
            return f"{expr}/{hrs * 3600.0 / unit:f}"
        return expr

    hrs = since / 3600.0 if hours_n < 2 else info.phase_sec / 3600.0
    info.rows[key + "_0"] = _span_row(ad, f"    last {hrs:.1f} hrs", [
        *(f"HourlyJobs{c}[0]" for c in _COUNTS), "HourlyJobsSlotTime[0]/3600.0",
        idle("HourlyJobsWeightedIdle[0]", hrs)])
    if since > unit or hours_n > 1:
        if hours_n > 1:
            hrs = (info.phase_sec + unit) / 3600.0
            if hours_n == 2:
                hrs = since / 3600.0
            info.rows[key + "_2"] = _span_row(ad, f"    Last {hrs:.1f} hrs", [
                *(f"HourlyJobs{c}[0] + HourlyJobs{c}[1]" for c in _COUNTS),
                "(HourlyJobsSlotTime[0] + HourlyJobsSlotTime[1])/3600.0",
                idle("(HourlyJobsWeightedIdle[0] + HourlyJobsWeightedIdle[1])", hrs)])
        if since >= unit * 3:
            whole = min(int(since / 3600), 24)
            info.rows[key + "_3"] = _span_row(ad, f"    Last {whole} hrs", [
                *(f"sum(HourlyJobs{c})" for c in _COUNTS), "sum(HourlyJobsSlotTime)/3600.0",
                "sum(HourlyJobsWeightedIdle)/size(HourlyJobsWeightedIdle)"])
    for suffix, label, day, after in (("_4", "    Yesterday", 0, 24 * 3600), ("_5", "    Day Before", 1, 27 * 3600)):
        if since > after:
            info.rows[key + suffix] = _span_row(ad, label, [
                *(f"DailyJobs{c}[{day}]" for c in _COUNTS), f"DailyJobsSlotTime[{day}]/3600.0",
                f"DailyJobsWeightedIdle[{day}]/size(HourlyJobsWeightedIdle)"])


def daily_rows(ads, rescale: bool = False, now: float | None = None) -> list[list]:
    """The tool's rows of values, in its order (by key): a record's row holds its name
    only; a span's row its label, then Launched, NoExec, Requeued, Held, SlotHours and
    IdleWeight (None where the expression gives no number)."""
    info = _Info(rescale, now)
    for ad in ads:
        _add(info, ad)
    return [row for _, row in sorted(info.rows.items(), key=lambda item: item[0].encode("utf-8", "surrogateescape"))]


def daily_lines(ads, rescale: bool = False, now: float | None = None, width: int = 0) -> list[str]:
    """The tool's lines (heading first) for the records ``ads`` (in the order the schedd
    sent them); ``now``: the tool's clock (read at the first record when not given);
    ``width``: each line is cut to ``width - 1`` characters (the tool's display width; 0:
    not cut, as with ``-wide``)."""
    rows = [[row[0], *(_cell(value, fmt) or "" for value, fmt in zip(row[1:], _FORMATS))] for row in
            daily_rows(ads, rescale, now)]
    rows = [row + [""] * (len(HEADINGS) - len(row)) for row in rows]
    widths = [max([len(heading), *(len(row[i]) for row in rows)]) for i, heading in enumerate(HEADINGS)]
    lines = [" ".join(h.ljust(w) for h, w in zip(HEADINGS, widths))]
    lines += [" ".join(cell.ljust(w) for cell, w in zip(row, widths)) for row in rows]
    return [line[:width - 1] for line in lines] if width > 0 else lines


def display_width(stream) -> int:
    """HTCondor's display width: the terminal's columns, or 1024 when not a terminal."""
    try:
        return os.get_terminal_size(stream.fileno()).columns or 1024
    except (OSError, ValueError, AttributeError):
        return 1024
