"""Submit.setSubmitMethod: values under 100 are HTCondor's own and need allow_reserved_values;
the refusal is htcondor2's sentence."""

from __future__ import annotations

import pytest

from jobledger.eventcore.submit.description import Submit


def test_reserved_values_need_the_flag_and_are_refused_in_htcondors_words():
    sub = Submit("executable = /bin/true\n")
    assert sub.getSubmitMethod() == 2
    with pytest.raises(ValueError) as refused:
        sub.setSubmitMethod(69)
    assert str(refused.value) == "Submit method value must be 100 or greater, or allowed_reserved_values must be True."
    assert sub.getSubmitMethod() == 2
    sub.setSubmitMethod(69, True)
    assert sub.getSubmitMethod() == 69
    sub.setSubmitMethod(666)
    assert sub.getSubmitMethod() == 666
