"""The schedd's constraint test (eventcore.adwire.matches) answers as the ClassAd engine
on the whole ad: over plain dicts and queue rows (JobAd), with answers worked out once
per set of texts only when they depend on nothing else (no clock, no random numbers)."""

from __future__ import annotations

import itertools

from jobledger.eventcore import adwire
from jobledger.daemons.storage.adrow import JobAd
from jobledger.daemons.storage.adtext import ensure_environment, to_classad
from jobledger.eventcore.classad import compile_constraint
from jobledger.eventcore.classad.env import ENV

CLUSTER = {"Owner": '"alice"', "JobPrio": "0", "RequestDisk": "RequestMemory * 4",
           "RequestMemory": "128", "Cmd": '"/bin/true"', "Stamp": "time()"}
PROCS = [{"ProcId": "0", "JobStatus": "1", "Args": '"a 0"'},
         {"ProcId": "1", "JobStatus": "5", "JobPrio": "7", "requestmemory": "2048"},
         {"ProcId": "2", "JobStatus": "2", "Args": '"b 2"', "OWNER": '"Bob"'}]
CONSTRAINTS = ["JobPrio > 5", "RequestDisk >= 8192", 'Owner == "bob"', 'owner =?= "Bob"',
               "JobStatus == 1 || jobprio == 7", 'regexp("^a", Args)', "Args =?= undefined",
               "MY.RequestMemory < 1000 && ProcId != 2", "Nope", "Stamp > 100",
               "JobPrio + random(1) >= 0", "isUndefined(Missing) && Cmd == \"/bin/true\""]


def test_answers_are_the_engines_on_the_whole_ad():
    ensure_environment()
    for proc, constraint in itertools.product(PROCS, CONSTRAINTS):
        whole = dict(CLUSTER, **proc)
        expected = compile_constraint(constraint)(to_classad(whole))
        for _ in range(2):          # the second time from what the first one noted
            assert adwire.matches(constraint, JobAd(dict(proc), CLUSTER)) is expected, constraint
            assert adwire.matches(constraint, whole) is expected, constraint


def test_answers_that_depend_on_the_clock_are_not_kept():
    ensure_environment()
    clock = ENV.clock
    try:
        for now, expected in ((50.0, False), (500.0, True), (50.0, False)):
            ENV.clock = lambda: now
            assert adwire.matches("Stamp > 100", JobAd({"ProcId": "0"}, CLUSTER)) is expected
            assert adwire.matches("time() > 100 && JobPrio == 0", CLUSTER) is expected
    finally:
        ENV.clock = clock


def test_a_shared_answer_names_what_it_read_and_never_the_clock():
    ensure_environment()
    assert adwire.ConstraintTest("JobPrio > 5").shared_answer(CLUSTER) == (("jobprio",), False)
    assert adwire.ConstraintTest("RequestDisk >= 512").shared_answer(CLUSTER) == (
        ("requestdisk", "requestmemory"), True)
    assert adwire.ConstraintTest("Missing =?= undefined").shared_answer(None) == (("missing",), True)
    for constraint in ("Stamp > 100", "time() > 100", "random(10) < 5 && JobPrio == 0"):
        assert adwire.ConstraintTest(constraint).shared_answer(CLUSTER) is None, constraint


VALUED = ["RequestDisk", "requestdisk", "RequestMemory", "Owner", "Args", "Nope", "Stamp"]


def test_values_are_the_engines_on_the_whole_ad():
    """``evaluate`` keeps a value per set of texts it read: each ad still gets its own."""
    ensure_environment()
    procs = [PROCS[0], {"ProcId": "1", "RequestMemory": "2048", "Stamp": "RequestDisk"},
             {"ProcId": "2", "Owner": '"Bob"', "RequestDisk": "RequestMemory * 2 + 1.5"}]
    for proc, name in itertools.product(procs, VALUED):
        whole = dict(CLUSTER, **proc)
        ad = to_classad(whole)
        found = ad.eval(name) if name in ad else None
        expected = found if isinstance(found, (bool, int, float, str)) else None   # undefined, error
        for _ in range(2):          # the second time from what the first one noted
            value = adwire.evaluate(whole, name)
            assert value == expected and type(value) is type(expected), (name, proc)
            value = adwire.evaluate(JobAd(dict(proc), CLUSTER), name)
            assert value == expected and type(value) is type(expected), (name, proc)


def test_a_jobs_own_attribute_hides_its_clusters_whatever_the_case():
    """A queue row's proc spells ``requestmemory``, its cluster ``RequestMemory``: the
    proc's is the value, as the chained ad evaluates it (and RequestDisk reads it)."""
    ensure_environment()
    row = JobAd(dict(PROCS[1]), CLUSTER)
    for name in ("RequestMemory", "requestmemory", "REQUESTMEMORY"):
        assert adwire.evaluate(row, name) == 2048, name
    assert adwire.evaluate(row, "RequestDisk") == 8192
    assert adwire.evaluate(JobAd(dict(PROCS[0]), CLUSTER), "requestMEMORY") == 128
    assert adwire.evaluate(row, "NoSuchAttribute") is None


def test_values_that_depend_on_the_clock_are_not_kept():
    ensure_environment()
    clock = ENV.clock
    try:
        for now in (50.0, 500.0, 50.0):
            ENV.clock = lambda: now
            assert adwire.evaluate({"Stamp": "time() + 1"}, "Stamp") == int(now) + 1
    finally:
        ENV.clock = clock


def test_string_literals_with_escapes_read_as_the_engine_reads_them():
    """A string's octal escapes (what the ClassAd writer makes of bytes that are not
    printable or not UTF-8) read as the engine reads them: ``"caf\\351"`` is the byte
    0xE9 (kept as a surrogate), not an error at every start of the job that holds it."""
    ensure_environment()
    for text in ['"caf\\351"', '"caf\\303\\251"', '"a\\nb\\tc"', '"q\\"z\\\\"', '"\\101\\102"']:
        assert adwire.literal(text) == to_classad({"A": text}).eval("A"), text
    assert adwire.literal('"caf\\351"') == "caf\udce9"
    assert adwire.evaluate({"Args": '"caf\\351"'}, "Args") == "caf\udce9"
    try:
        adwire.literal('"x\\0y"')            # a NUL: no literal (the engine refuses it)
    except adwire.NotLiteral:
        pass
    else:
        raise AssertionError("a NUL escape read as a literal")


def test_a_literal_read_again_reads_the_same_and_an_expression_stays_one():
    """Texts are read once and their values kept: a second reading gives the same value,
    an expression is refused every time, and a text longer than those kept reads too."""
    long_text = '"' + "x" * 500 + '"'
    for _ in range(2):
        assert adwire.literal(" 42 ") == 42
        assert adwire.literal("TRUE") is True
        assert adwire.literal('"a\\"b"') == 'a"b'
        assert adwire.literal(long_text) == "x" * 500
        assert adwire.literal("undefined") is None
        for expression in ("RequestMemory * 2", '"x\\0y"'):
            try:
                adwire.literal(expression)
            except adwire.NotLiteral:
                continue
            raise AssertionError(f"{expression!r} read as a literal")
