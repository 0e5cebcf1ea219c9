"""``condor_qusers -daily`` laid out as HTCondor's tool lays it out (qusers.cpp
process_daily_ads and the dailyStats_Projection print mask: every column left-aligned,
as wide as its heading or widest cell, one space apart, rows sorted by key), with the
tool's clock injected; and the published lists read the same by the real classad2."""

from __future__ import annotations

import pytest

from jobledger.condor_cli.qusers import parse
from jobledger.condor_cli.qusers_daily import daily_lines
from jobledger.eventcore import adwire
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.journal import MemoryJournal
from jobledger.eventcore.projections.usage import UsageFold

from tests.journal.helpers import event
from tests.test_usage_stats import T0, job

START = 1_000_000


def ad(**attrs) -> object:
    text = {name: (value if isinstance(value, str) else str(value)) for name, value in attrs.items()}
    return adwire.to_classad(text)


def stats(**extra):
    base = {"HourlyStatsStartTime": START, "HourlyStatsUnitSize": 14400, "HourlyStatsUnitPhase": 1800}
    base.update(extra)
    return base


def test_one_bucket_the_record_row_then_the_span_since_the_start():
    alice = ad(User='"alice@h"', HourlyJobsLaunched="{2}", DailyJobsLaunched="{}",
               HourlyJobsSlotTime="{2000}", DailyJobsSlotTime="{}",
               HourlyJobsWeightedIdle="{0.402778}", DailyJobsWeightedIdle="{}", **stats())
    bob = ad(User='"bob@h"', **stats())
    assert daily_lines([bob, alice], now=START + 600) == [
        "Name             Launched NoExec Requeued Held SlotHours IdleWeight",
        "alice@h                                                            ",
        "    last 0.2 hrs 2                             0.56      0.40      ",
        "bob@h                                                              ",
        "    last 0.2 hrs                                                   ",
    ]


def test_two_days_the_spans_yesterday_and_the_day_before():
    rec = ad(Name='"chem"', HourlyJobsWeightedIdle="{1.5,0.5,0.0,0.0,0.0,0.0}",
             DailyJobsWeightedIdle="{6.0,3.0}", HourlyJobsLaunched="{3,1,0,0,0,0}",
             DailyJobsLaunched="{5,7}", HourlyJobsHeld="{1}", DailyJobsHeld="{}",
             HourlyJobsSlotTime="{7200,3600,0,0,0,0}", DailyJobsSlotTime="{36000,18000}",
             **stats())
    now = START + 100_000
    assert daily_lines([rec], now=now) == [
        "Name             Launched NoExec Requeued Held SlotHours IdleWeight",
        "chem                                                               ",
        "    last 0.5 hrs 3                        1    2.00      1.50      ",
        "    Last 4.5 hrs 4                             3.00      2.00      ",
        "    Last 24 hrs  4                        1    3.00      0.33      ",
        "    Yesterday    5                             10.00     1.00      ",
        "    Day Before   7                             5.00      0.50      ",
    ]
    rescaled = daily_lines([rec], rescale=True, now=now)
    # the idle weight over the buckets the span covers: 1.5 / (0.5 h / 4 h), 2.0 / (4.5 h / 4 h)
    assert [line.split()[-1] for line in rescaled[2:4]] == ["12.00", "1.78"]


def test_rows_sort_by_key_bytes_as_the_tools_map():
    # "a.b" < "a_0": a record named "a.b" sorts between "a" and a's span rows, as in HTCondor
    names = [line.split()[0] for line in daily_lines([ad(Name='"a"', **stats()), ad(Name='"a.b"', **stats())],
                                                       now=START + 60)[1:]]
    assert names == ["a", "a.b", "last", "last"]


def test_lines_are_cut_at_the_display_width_less_one():
    rec = ad(User='"alice@h"', HourlyJobsLaunched="{2}", **stats())
    lines = daily_lines([rec], now=START + 60, width=20)
    assert lines == [line[:19] for line in daily_lines([rec], now=START + 60)]
    assert lines[0] == "Name             La"


def test_the_flag_and_its_rescale_form():
    assert parse(["-daily", "-wide"])["wide"] is True
    assert parse(["-daily"])["daily"] == 1
    assert parse(["-da:r"])["daily"] == 2
    assert parse(["-daily:rescale", "-projects"])["daily"] == 2


def test_published_lists_read_the_same_by_classad2():
    classad2 = pytest.importorskip("classad2")
    journal = MemoryJournal()
    journal.append(job(cpus=3), time=T0)
    journal.append([event(JobId(1, 0), 1)], time=T0 + 777)
    fold = UsageFold()
    fold.apply_all(journal.entries())
    attrs = fold.publish(T0 + 4 * 3600 + 5, start=T0)[("user", "alice")]
    theirs = classad2.ClassAd("[" + "; ".join(f"{k} = {v}" for k, v in attrs.items()) + "]")
    ours = adwire.to_classad(attrs)
    for name in attrs:
        assert ours.eval(name) == theirs.eval(name)
    for expr in ("HourlyJobsSlotTime[0]/3600.0", "sum(HourlyJobsWeightedIdle)/size(HourlyJobsWeightedIdle)",
                 "HourlyJobsLaunched[0] + HourlyJobsLaunched[1]", "DailyJobsLaunched[0]"):
        mine, real = _eval(expr, ours), classad2.ExprTree(expr).eval(theirs)
        assert (mine == real) if isinstance(real, (int, float)) and type(real) in (int, float) else mine is None


def _eval(expr, ad):
    from jobledger.eventcore.classad import ExprTree
    value = ExprTree(expr).eval(ad)
    return value if type(value) in (int, float) else None


def test_with_af_the_columns_take_the_rows_values_by_position():
    """HTCondor's tool skips its daily print mask when -af is given and renders the daily
    rows of values through the -af mask: column i shows value i, whatever the attribute
    named; a row's missing values (the record's own row has only its name) print empty."""
    from jobledger.condor_cli.adprint import AutoFormat
    from jobledger.condor_cli.qusers_daily import daily_rows
    alice = ad(User='"alice@h"', HourlyJobsLaunched="{2}", HourlyJobsSlotTime="{1800}",
               HourlyJobsWeightedIdle="{0.5}", **stats())
    rows = daily_rows([alice], now=START + 600)
    assert rows == [["alice@h"], ["    last 0.2 hrs", 2, None, None, None, 0.5, 0.5]]
    three = AutoFormat(["User", "HourlyJobsLaunched", "Anything"], None, "condor_qusers")
    assert [three.row_values(row) for row in rows] == ["alice@h  \n", "    last 0.2 hrs 2 \n"]
    seven = AutoFormat(["a", "b", "c", "d", "e", "f", "g", "h"], ",", "condor_qusers")
    assert seven.row_values(rows[1]) == "    last 0.2 hrs, 2, , , , 0.5, 0.5, \n"
    labelled = AutoFormat(["Name", "Launched"], "l", "condor_qusers")
    assert labelled.row_values(rows[0]) == "Name = alice@h \n"
    quoted = AutoFormat(["Name"], "V", "condor_qusers")
    assert quoted.row_values(rows[0]) == '"alice@h"\n'


def test_with_af_the_query_asks_for_what_af_names_and_the_key():
    """As the tool's: the projection is the -af attributes and User (Name with -projects),
    so spans are computed from those alone."""
    from jobledger.condor_cli.qusers import show

    class Schedd:
        asked: list = []

        def queryUserAds(self, constraint, projection):
            self.asked.append(("user", constraint, list(projection)))
            return [ad(User='"alice@h"', HourlyJobsLaunched="{4}", HourlyStatsStartTime=START,
                       HourlyStatsUnitSize=14400, HourlyStatsUnitPhase=1800)]

        def queryProjectAds(self, constraint, projection):
            self.asked.append(("project", constraint, list(projection)))
            return []

    import io
    import sys
    schedd, out = Schedd(), io.StringIO()
    real, sys.stdout = sys.stdout, out
    try:
        show(schedd, parse(["-daily", "-af", "HourlyJobsLaunched", "HourlyJobsLaunched"]))
        show(schedd, parse(["-daily", "-projects", "-af:h", "Launched"]))
    finally:
        sys.stdout = real
    assert schedd.asked == [("user", "", ["HourlyJobsLaunched", "User"]), ("project", "", ["Launched", "Name"])]
    lines = out.getvalue().splitlines()
    assert lines[0] == "alice@h "
    assert lines[1].startswith("    last ") and lines[1].endswith(" hrs 4")
    # the tool's clock is far past the record's start: every span is shown
    assert lines[2:] == ["    Last 24 hrs 4", "    Yesterday ", "    Day Before ", "Launched"]
