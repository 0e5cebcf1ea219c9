"""The Submit object's Python surface, side by side with htcondor2."""

from __future__ import annotations

import pathlib

import pytest

from jobledger import Submit

htcondor2 = pytest.importorskip("htcondor2")
pytestmark = pytest.mark.oracle


def both(fn):
    """fn(SubmitClass) for htcondor2's and ours: ("ok", value) or ("error", type name)."""
    out = []
    for cls in (htcondor2.Submit, Submit):
        try:
            out.append(("ok", fn(cls)))
        except (KeyError, ValueError, TypeError, NotImplementedError) as exc:
            for builtin in (KeyError, ValueError, TypeError, NotImplementedError):
                if isinstance(exc, builtin):
                    out.append(("error", builtin.__name__))
                    break
    return out


CASES = {
    "dict values": lambda S: str(S({"a": 1, "b": 1.5, "c": True, "d": pathlib.Path("/x"), "+E": '"s"'})),
    "dict list value": lambda S: str(S({"a": [1]})),
    "dict int key": lambda S: str(S({1: "a"})),
    "dict queue key": lambda S: str(S({"queue": "3"})),
    "dict newline": lambda S: str(S({"a": "x\ny"})),
    "kwargs": lambda S: str(S(a="1", b="2")),
    "kwargs int": lambda S: str(S(a=1)),
    "queue kw": lambda S: str(S("a=1\nqueue 2", queue="queue 5")),
    "queue kw plain": lambda S: str(S("a=1", queue="x in (a b)")),
    "bad input": lambda S: str(S(5)),
    "none": lambda S: str(S(None)),
    "repr": lambda S: repr(S("a=1")),
    "setitem": lambda S: (lambda s: (s.__setitem__("+Qux", "2"), s.__setitem__("A", "7"),
                                     s.__setitem__("new", ""), str(s), list(s.keys()))[3:])(S("a=1")),
    "setitem int": lambda S: S("a=1").__setitem__("b", 1),
    "setitem key": lambda S: S("a=1").__setitem__(1, "b"),
    "delitem": lambda S: S("a=1").__delitem__("a"),
    "pop": lambda S: S("a=1").pop("a"),
    "getitem int": lambda S: S("a=1")[1],
    "expand int": lambda S: S("a=1").expand(1),
    "contains": lambda S: ("A" in S("a=1"), "b" in S("a=1")),
    "get default": lambda S: S("a=1").get("zz", "d"),
    "len": lambda S: len(S("a=1\nb=2\nA=3")),
    "setQArgs queue": lambda S: (lambda s: (s.setQArgs("queue 3"), s.getQArgs())[1])(S("a=1")),
    "setQArgs spaces": lambda S: (lambda s: (s.setQArgs("  queue   x in (a b)"), s.getQArgs())[1])(S("a=1")),
    "setQArgs word": lambda S: (lambda s: (s.setQArgs("queuex"), s.getQArgs())[1])(S("a=1")),
    "setQArgs open": lambda S: (lambda s: (s.setQArgs("a in ("), str(s))[1])(S("a=1")),
    "setQArgs int": lambda S: S("a=1").setQArgs(3),
    "submit method": lambda S: S("a=1").getSubmitMethod(),
    "itemdata queue prefix": lambda S: list(S("a = 1\n").itemdata("queue y in (p q)")),
    "itemdata from block": lambda S: S("a = 1\nqueue 3 x in (\na\nb\n)\n").itemdata("y from (\np\n)") is None,
    "str multi-line queue": lambda S: str(S("a = 1\nqueue 3 x from (\na\nb\n)\n")),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_as_htcondor2(name):
    theirs, ours = both(CASES[name])
    assert ours == theirs


def test_jobs_is_our_extension():
    """htcondor2 dropped Submit.jobs(); ours builds the ads (v1 behaviour)."""
    with pytest.raises(NotImplementedError):
        htcondor2.Submit("executable = /bin/true").jobs()
    assert len(list(Submit("executable = /bin/true\nqueue 2").jobs())) == 2
