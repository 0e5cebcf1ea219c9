"""Where we deliberately differ from htcondor2 25.14.1, one test per case,
each checking what htcondor2 does and what we do instead, and why."""

from __future__ import annotations

import pytest

from jobledger.eventcore.errors import MacroError, SubmitError
from jobledger import Submit

htcondor2 = pytest.importorskip("htcondor2")
pytestmark = pytest.mark.oracle


def test_underscore_digit_queue_variable_is_accepted():
    """htcondor2 rejects `queue x_1 in (a)` ("Invalid Queue count expression":
    its backwards scan stops at a digit after '_').  `x_1` is a valid macro
    name everywhere else, so we accept it as a queue variable."""
    text = "a = 1\nqueue x_1 in (p q)\n"
    with pytest.raises(ValueError):
        list(htcondor2.Submit(text).itemdata())
    assert list(Submit(text).itemdata()) == [{"x_1": "p"}, {"x_1": "q"}]


def test_failing_macro_functions_stop_jobs_but_not_expand():
    """htcondor2's expand() turns a failing macro function into nothing (an
    out-of-range $CHOICE, $INT of text) and an invalid format into the format
    text; our expand() does the same.  Building jobs follows condor_submit
    instead, which stops with an error: jobs() raises MacroError naming the
    line, so a typo cannot silently submit wrong jobs."""
    text = ("N = 7\nv = $INT(N,%5.2f)\nw = x$CHOICE(5,a,b)\nc = $CHOICE(-1,x,y)\n"
            "t = x$INT(abc)\n")
    theirs, ours = htcondor2.Submit(text), Submit(text)
    for key, value in (("v", "%5.2f"), ("w", "x"), ("c", "x"), ("t", "x")):
        assert theirs.expand(key) == ours.expand(key) == value
    for key, message in (("v", "not a valid format"), ("w", "out of range"), ("c", "invalid index"),
                         ("t", "does not evaluate")):
        sub = Submit("executable = /bin/true\n" + text + f"arguments = $({key})\n")
        with pytest.raises(MacroError, match=message) as info:
            list(sub.jobs())
        assert info.value.line == 7


def test_circular_reference_raises_instead_of_hanging():
    """`a = $(b)` / `b = $(a)` makes htcondor2's expand() loop forever (not
    run here); we stop after a bounded number of replacements and raise."""
    sub = Submit("executable = /bin/true\na = $(b)\nb = $(a)\narguments = $(a)\n")
    with pytest.raises(KeyError):
        sub.expand("a")
    with pytest.raises(MacroError, match="does not end"):
        list(sub.jobs())


def test_commands_in_include_and_queue_from_are_refused():
    """`include : cmd |` and `queue x from cmd |` run programs in HTCondor;
    a submit description should not run programs here, so both are errors."""
    with pytest.raises(SubmitError, match="not supported"):
        Submit("include : echo a = 1 |\n")
    with pytest.raises(SubmitError, match="not supported"):
        Submit("a = 1\nqueue x from ls |\n").itemdata()


def test_last_line_without_a_newline_reads_like_any_other():
    """htcondor2 reads a last line that has no newline after it differently:
    an indented one (" a = 1", " # done") raises ValueError and trailing
    blanks stay in the value ("a=1  " gives "1  ").  That is a line-reader
    quirk, not a rule of the language: we read the last line like the others."""
    with pytest.raises(ValueError):
        htcondor2.Submit("a = 1\n  # done")
    with pytest.raises(ValueError):
        htcondor2.Submit(" a = 1")
    assert dict(htcondor2.Submit("a=1  ")) == {"a": "1  "}
    assert dict(htcondor2.Submit("a = 1\n  # done\n")) == {"a": "1"}
    assert dict(Submit("a = 1\n  # done")) == {"a": "1"}
    assert dict(Submit(" a = 1")) == {"a": "1"} and dict(Submit("a=1  ")) == {"a": "1"}


def test_queue_from_a_directory_is_an_error(in_corpus):
    """`queue x from shared_inputs` (a directory): htcondor2's itemdata()
    quietly gives None (and Schedd.submit then refuses "no items"); we
    say what is wrong: the item file cannot be read."""
    text = "a = 1\nqueue x from shared_inputs\n"
    assert htcondor2.Submit(text).itemdata() is None
    with pytest.raises(SubmitError, match="can't open file shared_inputs"):
        Submit(text).itemdata()


def test_unknown_macro_function_stops_jobs():
    """htcondor2 leaves `$UNKNOWNF(x)` as text (so does our expand()); when
    jobs are built we treat a capitalised `$NAME(` that is no macro function
    as the typo it almost always is and raise, naming the line."""
    text = "executable = /bin/true\narguments = $UNKNOWNF(x) $$(Memory)\n"
    assert htcondor2.Submit(text).expand("arguments") == "$UNKNOWNF(x) $$(Memory)"
    assert Submit(text).expand("arguments") == "$UNKNOWNF(x) $$(Memory)"
    with pytest.raises(MacroError, match=r"unknown macro function \$UNKNOWNF\(\)") as info:
        list(Submit(text).jobs())
    assert info.value.line == 2 and info.value.text == "arguments = $UNKNOWNF(x) $$(Memory)"
