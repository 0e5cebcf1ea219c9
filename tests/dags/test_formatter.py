"""Node names: generated from (layer, index) and parsed back."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
import pytest

from jobledger import dags
from jobledger.dags import exceptions

layer_names = st.text(st.characters(blacklist_characters=":", blacklist_categories=("Cs",)), min_size=1)


@given(layer_names, st.integers(min_value=0, max_value=10**6), st.integers(min_value=0, max_value=5))
def test_generate_then_parse_is_identity(layer, index, offset):
    formatter = dags.SimpleFormatter(offset=offset)
    assert formatter.parse(formatter.generate(layer, index)) == (layer, index)


@pytest.mark.parametrize("name", ["nosep", "a:b:1", "a:", "a:x", "a:1.5", "a:٣"])
def test_names_that_are_not_layer_and_index(name):
    with pytest.raises(exceptions.CannotInvertFormat, match=repr(name)):
        dags.SimpleFormatter().parse(name)


def test_zero_padded_and_offset_names():
    formatter = dags.SimpleFormatter(separator="_", index_format="{:04d}", offset=1)
    assert formatter.generate("job", 9) == "job_0010"
    assert formatter.parse("job_0010") == ("job", 9)


@pytest.mark.parametrize("index_format", ["{:x}", "{:o}", "{:b}", "{:e}"])
def test_formats_that_do_not_read_back_are_refused(index_format):
    with pytest.raises(exceptions.CannotInvertFormat):
        dags.SimpleFormatter(index_format=index_format).generate("layer", 100)


def test_empty_separator_is_refused():
    with pytest.raises(ValueError):
        dags.SimpleFormatter(separator="")
