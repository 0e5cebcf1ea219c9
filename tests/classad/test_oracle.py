"""Every case of ../shared/oracle/classad/cases.jsonl, one test per case.

The few cases where we deliberately answer differently from HTCondor are in
DEVIATIONS (case id -> reason, our answer) and checked by one test of their
own, so they are neither silently skipped nor counted as agreement.
"""

from __future__ import annotations

import pytest

from . import oracle

CASES = [(oracle.case_id(i, c), c) for i, c in enumerate(oracle.load_cases(), start=1)]

# case id -> (reason, what we return instead)
DEVIATIONS: dict[str, tuple[str, dict]] = {}


def _params(kind):
    return [pytest.param(c, id=cid) for cid, c in CASES if c["kind"] == kind and cid not in DEVIATIONS]


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


def test_deliberate_deviations():
    """Where we are convinced HTCondor is wrong: we differ, and give our answer."""
    by_id = dict(CASES)
    assert len(DEVIATIONS) < 10
    for cid, (reason, ours_expected) in DEVIATIONS.items():
        case = by_id[cid]
        assert reason
        result, _, _ = oracle.run_eval(case)
        assert not oracle.same_value(result, case["result"]), cid
        assert oracle.same_value(result, ours_expected), (cid, result)
