"""Where we deliberately differ from htcondor2 25.14.1, one test per case,
each checking what htcondor2 does and what we do instead, and why."""

from __future__ import annotations

import pytest

from eventcore.errors import MacroError, SubmitError
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


def test_int_with_a_float_format_is_an_error():
    """htcondor2 expands `$INT(N,%5.2f)` to the text `%5.2f`; the format is
    invalid for an integer (condor_submit's own message says so), so we raise
    (a KeyError from expand(), a SubmitError naming the line from jobs())."""
    text = "N = 7\nv = $INT(N,%5.2f)\n"
    assert htcondor2.Submit(text).expand("v") == "%5.2f"
    with pytest.raises(KeyError):
        Submit(text).expand("v")
    with pytest.raises(MacroError, match="not a valid format") as info:
        list(Submit("executable = /bin/true\n" + text + "arguments = $(v)\n").jobs())
    assert info.value.line == 4


def test_negative_choice_index_is_an_error():
    """htcondor2 gives the first item for `$CHOICE(-1,x,y)`; HTCondor's own
    macro code rejects a negative index, and so do we."""
    text = "v = $CHOICE(-1,x,y)\n"
    assert htcondor2.Submit(text).expand("v") == "x"
    with pytest.raises(KeyError):
        Submit(text).expand("v")


def test_circular_reference_raises_instead_of_hanging():
    """`a = $(b)` / `b = $(a)` makes htcondor2's expand() loop forever (not
    run here); we stop after a bounded number of replacements and raise."""
    sub = Submit("executable = /bin/true\na = $(b)\nb = $(a)\narguments = $(a)\n")
    with pytest.raises(KeyError):
        sub.expand("a")
    with pytest.raises(MacroError, match="does not end"):
        list(sub.jobs())


def test_from_table_is_refused():
    """htcondor2 treats `queue x from table (a)` as "no items" (None); the
    table form is not implemented here, so we say so instead of silently
    submitting nothing."""
    text = "a = 1\nqueue x from table (a)\n"
    assert htcondor2.Submit(text).itemdata() is None
    with pytest.raises(SubmitError, match="from table"):
        Submit(text).itemdata()


def test_commands_in_include_and_queue_from_are_refused():
    """`include : cmd |` and `queue x from cmd |` run programs in HTCondor;
    a submit description should not run programs here, so both are errors."""
    with pytest.raises(SubmitError, match="not supported"):
        Submit("include : echo a = 1 |\n")
    with pytest.raises(SubmitError, match="not supported"):
        Submit("a = 1\nqueue x from ls |\n").itemdata()
