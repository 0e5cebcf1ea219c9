"""The helpers other parts build on: constraints, references, matchmaking,
the evaluation environment, and parse errors that point at the text."""

from __future__ import annotations

import random

import pytest

from bench.bench_classad import JOB_AD, MACHINE_AD, machine_texts
from jobledger.eventcore.classad import (ClassAd, ExprTree, compile_constraint, equality_conjuncts, match_many, parse_expr,
                               parse_old_ad, rank, references, requirements_ok, symmetric_match, Value)
from jobledger.eventcore.classad import evaluate as E
from jobledger.eventcore.classad.env import Environment
from jobledger.eventcore.errors import ClassAdEvalError, ClassAdParseError


@pytest.mark.parametrize("text,expected", [
    ("JobStatus == 1", True), ("JobStatus == 2", False), ("Owner == \"ALICE\"", True),
    ("NoSuch", False), ("NoSuch == 1", False), ("error", False), ("\"yes\"", False),
    ("RequestCpus", True), ("RequestCpus - 2", False), ("0.5", True), ("real(\"nan\")", True),
    ("{1}", False), ("undefined || true", True),
])
def test_compile_constraint_selects_like_condor_q(text, expected):
    job = ClassAd(JOB_AD)
    assert compile_constraint(text)(job) is expected


def test_compile_constraint_accepts_none_and_exprtree():
    job = ClassAd(JOB_AD)
    assert compile_constraint(None)(job) is True
    assert compile_constraint(ExprTree("ProcId == 3"))(job) is True
    with pytest.raises(ClassAdParseError):
        compile_constraint("JobStatus ==")


def test_references_strip_scopes():
    assert references("TARGET.Memory >= RequestMemory && MY.Owner == \"x\" && foo(Bar)") == \
        {"memory", "requestmemory", "owner", "bar"}


@pytest.mark.parametrize("text,expected", [
    ("ClusterId == 5", {"ClusterId": 5}),
    ("(ClusterId == 5) && (ProcId == 2)", {"ClusterId": 5, "ProcId": 2}),
    ("\"alice\" == Owner && MY.JobStatus == 1", {"Owner": "alice", "JobStatus": 1}),
    ("ClusterId == 5 || ProcId == 2", None),
    ("ClusterId >= 5", None),
    ("ClusterId == 5 && ClusterId == 6", None),
    ("TARGET.ClusterId == 5", None),
    ("ClusterId == 2.5", None),
])
def test_equality_conjuncts(text, expected):
    assert equality_conjuncts(text) == expected


def test_match_many_agrees_with_symmetric_match_and_ranks():
    job = ClassAd(JOB_AD)
    machines = [ClassAd(t) for t in machine_texts(200, seed=3)]
    got = match_many(job, machines)
    expected = [i for i, m in enumerate(machines) if job.symmetricMatch(m)]
    assert [i for i, _, _ in got] == expected
    assert 0 < len(expected) < len(machines)
    for i, jr, mr in got:
        m = machines[i]
        assert jr == pytest.approx(job.lookup("Rank").eval(scope=job, target=m))
        assert mr == m.lookup("Rank").eval(scope=m, target=job)


def test_match_many_agrees_with_classad2():
    htcondor2 = pytest.importorskip("htcondor2")   # noqa: F841  (HTCondor mode)
    import classad2
    texts = machine_texts(300, seed=11)
    theirs_job = classad2.ClassAd(JOB_AD)
    theirs = [i for i, t in enumerate(texts) if theirs_job.symmetricMatch(classad2.ClassAd(t))]
    ours = [i for i, _, _ in match_many(ClassAd(JOB_AD), [ClassAd(t) for t in texts])]
    assert ours == theirs


def test_rank_rules():
    a = ClassAd("[Requirements = true; Rank = TARGET.Mips]")
    b = ClassAd("[Requirements = true; Mips = 7]")
    assert rank(a, b) == 7.0
    assert rank(b, a) == 7.0   # b has no Rank: a's Rank is used (the negotiator's quirk)
    assert rank(ClassAd("[Rank = \"high\"]"), b) == 0.0
    assert rank(ClassAd("[Rank = true]"), b) == 1.0
    assert requirements_ok(b, a) and symmetric_match(a, b)


def test_evaluation_environment_is_injected():
    fixed = Environment(clock=lambda: 1_700_000_000.5, rng=random.Random(1))
    assert E.evaluate(ExprTree("time()"), None, None, env=fixed) == 1_700_000_000
    assert E.evaluate(ExprTree("CurrentTime"), ClassAd(), None, env=fixed) == 1_700_000_000
    r1 = E.evaluate(ExprTree("random(1000)"), None, None, env=fixed)
    again = Environment(clock=fixed.clock, rng=random.Random(1))
    assert E.evaluate(ExprTree("random(1000)"), None, None, env=again) == r1
    bare = Environment()
    with pytest.raises(ClassAdEvalError):
        E.evaluate(ExprTree("time()"), None, None, env=bare)
    with pytest.raises(ClassAdEvalError):
        E.evaluate(ExprTree("random()"), None, None, env=bare)
    assert E.evaluate(ExprTree("true || random()"), None, None, env=bare) is True


@pytest.mark.parametrize("text,line,column", [
    ("1 +", 1, 4),
    ("a &&\n  (b ||\n   @c)", 3, 4),
    ("\"unterminated", 1, 1),
    ("007", 1, 1),
    ("1.", 1, 2),
    ("f(1 2)", 1, 5),
    ("x /* never closed", 1, 3),
])
def test_parse_errors_point_at_the_text(text, line, column):
    with pytest.raises(ClassAdParseError) as info:
        parse_expr(text)
    err = info.value
    assert (err.line, err.column) == (line, column)
    caret_line = str(err).splitlines()[-1]
    assert caret_line == " " * (column - 1) + "^"


def test_old_format_keeps_good_lines_of_a_broken_ad():
    ad = parse_old_ad("A = 1\nB = (2\nC = 3\n\nD = 4\n")
    assert dict(ad) == {"A": 1, "D": 4}


def test_match_context_names():
    job, machine = ClassAd(JOB_AD), ClassAd(MACHINE_AD)
    assert ExprTree("TARGET.Memory").eval(job, machine) == 16384
    assert ExprTree("Memory").eval(job, machine) == 16384           # falls back to the other ad
    assert ExprTree("MY.Memory").eval(job, machine) is Value.Undefined   # MY. never falls back
    assert ExprTree("symmetricMatch").eval(job, machine) is True
    assert ExprTree("[q = Memory].q").eval(job, machine) is Value.Undefined   # nested: no fallback
    assert ExprTree("[q = RequestMemory].q").eval(job, machine) == 2048


def test_subclassed_ads_are_ads_to_the_evaluator():
    class JobAd(ClassAd):
        pass

    job = JobAd("[a = [b = 2]; r = a.b; Requirements = TARGET.x == 1]")
    assert ExprTree("a.b + 1").eval(job) == 3
    assert job.eval("r") == 2
    assert ExprTree("TARGET.a.b").eval(ClassAd(), job) == 2
    assert job.matches(ClassAd("[Requirements = TARGET.r == 2]"))
    assert symmetric_match(job, ClassAd("[x = 1; Requirements = true]"))


def test_match_context_replaces_the_parents_of_nested_participants():
    """During a match the two ads' parent scopes are their contexts (lCtx/rCtx),
    even for an ad that has a parent of its own (a nested ad's value)."""
    outer = ClassAd("[x = 99; n = [y = 1]]")
    nested = E.evaluate(ExprTree("n"), outer)          # keeps outer as its parent
    other = ClassAd("[z = 2]")
    assert E.evaluate(ExprTree("x"), nested, None) == 99
    assert E.evaluate(ExprTree("x"), nested, other) is E.UNDEF
    assert E.evaluate(ExprTree("TARGET.z + y"), nested, other) == 3
    assert E.evaluate(ExprTree("z"), nested, other) == 2          # unscoped fallback to the other ad
