"""Names HTCondor's own programs reach for: lastError() after a string comparison,
the types' v2 name, and htcondor2._schedd.job_spec_hack."""

from __future__ import annotations

import pickle

import pytest

import jobledger.classad as classad
from jobledger._schedd import Schedd, job_spec_hack
from jobledger import HTCondorValueError, Schedd as FacadeSchedd


def test_comparing_a_string_with_a_number_sets_last_error():
    # HTCondor's Operation::doComparison sets CondorErrMsg so, which lastError() returns.
    assert classad.ExprTree('debug(7 == "7")').eval() == classad.Value.Error
    assert classad.lastError() == "strings can only be compared to strings"
    classad.ExprTree('"a" == "A"').eval()
    assert classad.lastError() == "strings can only be compared to strings"  # kept until the next error


def test_a_parse_error_still_sets_last_error():
    with pytest.raises(classad.ClassAdException):
        classad.ExprTree("1 +")
    assert classad.lastError() and classad.lastError() != "strings can only be compared to strings"


def test_the_types_say_they_are_classad2s():
    assert "classad2" in str(type(classad.ClassAd()))
    assert "classad2" in str(type(classad.ExprTree("1")))
    ad = classad.ClassAd({"a": 1, "b": classad.ExprTree("a + 1")})
    back = pickle.loads(pickle.dumps(ad))
    assert back == ad and back.eval("b") == 2
    assert type(back) is classad.ClassAd


def _ids(addr, ids, *args):
    return ("ids", addr, ids, args)


def _constraint(addr, constraint, *args):
    return ("constraint", addr, constraint, args)


@pytest.mark.parametrize("spec, expected", [
    (7, ("constraint", "ClusterID == 7")),
    ("6", ("constraint", "ClusterID == 6")),
    ("6.5", ("ids", "6.5")),
    ("ClusterID >= 4", ("constraint", "ClusterID >= 4")),
    (classad.ExprTree("ClusterID != 3"), ("constraint", "ClusterID != 3")),
    (["2.0", "1.1"], ("ids", "2.0, 1.1")),
    (["2", "1.1"], ("constraint", "(ClusterID == 2) || (ClusterID == 1 && ProcID == 1)")),
])
def test_job_spec_hack_tells_ids_from_constraints(spec, expected):
    kind, addr, text, args = job_spec_hack("addr", spec, _ids, _constraint, [1, 2])
    assert (kind, text) == expected and addr == "addr" and args == (1, 2)


def test_job_spec_hack_refuses_other_types_and_bad_strings():
    with pytest.raises(TypeError):
        job_spec_hack("addr", 3.141, _ids, _constraint, [])
    with pytest.raises(HTCondorValueError):
        job_spec_hack("addr", "ClusterID >=", _ids, _constraint, [])
    assert Schedd is FacadeSchedd
