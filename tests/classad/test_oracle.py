"""Every case of ../shared/oracle/classad/cases.jsonl, one test per case.

We agree with HTCondor on every case of the corpus, so no case is set aside.
Where the reference is wrong outside the corpus (it crashes), the one test
``test_where_the_reference_crashes`` gives our answer and the reason.
"""

from __future__ import annotations

import pytest

from . import oracle

CASES = [(oracle.case_id(i, c), c) for i, c in enumerate(oracle.load_cases(), start=1)]


def _params(kind):
    return [pytest.param(c, id=cid) for cid, c in CASES if c["kind"] == kind]


def test_corpus_present(oracle_dir):
    assert (oracle_dir / "classad" / "cases.jsonl").is_file()
    kinds = {c["kind"] for _, c in CASES}
    assert kinds == {"eval", "match", "format", "parse_old"}


@pytest.mark.parametrize("case", _params("eval"))
def test_eval(case):
    result, unparsed, unparsed_repr = oracle.run_eval(case)
    assert oracle.same_value(result, case["result"]), (result, case["result"])
    assert unparsed_repr == case["unparsed_repr"]
    assert unparsed == case["unparsed"]


@pytest.mark.parametrize("case", _params("match"))
def test_match(case):
    ours = oracle.run_match(case)
    for key in ("left_requirements", "right_requirements", "left_rank", "right_rank"):
        assert oracle.same_value(ours[key], case[key]), (key, ours[key], case[key])
    for key in ("symmetric_match", "left_matches_right", "right_matches_left"):
        assert ours[key] == case[key], key


@pytest.mark.parametrize("case", _params("format"))
def test_format(case):
    ours = oracle.run_format(case)
    for key in ("repr", "str", "old", "json"):
        assert ours[key] == case[key], key


@pytest.mark.parametrize("case", _params("parse_old"))
def test_parse_old(case):
    ours = oracle.run_parse_old(case)
    assert ours["ad"] == case["ad"]
    assert ours["attrs"].keys() == case["attrs"].keys()
    for k in case["attrs"]:
        assert oracle.same_value(ours["attrs"][k], case["attrs"][k]), k


# expression -> (our answer, why HTCondor's answer is not copied)
REFERENCE_CRASHES = {
    '[ l = { [ a = 1 ] } ]["l"][0]': ("[ a = 1 ]", "the reference segfaults subscripting a list that came "
                                      "from a string subscript on an ad (README 'Oracle crashes')"),
    '[ l = { { 1 } } ]["l"][0]': ("{ 1 }", "same reference crash, list element"),
    '[ l = { [ a = 1 ] }; m = self["l"][0] ].m': ("[ a = 1 ]", "same reference crash through self"),
    '(splitUserName("a@b")).x': ("{ error,error }", "the reference crashes projecting a list of strings; "
                                 "spec 6: a non-ad element gives error"),
}


@pytest.mark.parametrize("text", sorted(REFERENCE_CRASHES))
def test_where_the_reference_crashes(text):
    from jobledger.eventcore.classad import ExprTree
    from jobledger.eventcore.classad import evaluate as E
    from jobledger.eventcore.classad.unparse import unparse_value

    expected, reason = REFERENCE_CRASHES[text]
    assert reason
    assert unparse_value(E.evaluate(ExprTree(text), None, None)) == expected
