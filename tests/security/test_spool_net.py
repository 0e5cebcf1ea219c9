"""The spool upload's pieces on the schedd's side (daemons/spool_net.py), without a pool:
whatever a client sends, nothing is written outside the upload's own directory, every
refusal is an HTCondorValueError naming the job and the name, and nothing is left behind."""

from __future__ import annotations

import base64
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobledger.daemons import spool_net
from jobledger.eventcore.errors import HTCondorValueError

NAMES = st.one_of(st.sampled_from(["a", "a/b", "../x", "/etc/x", "a/../../x", ".", "", "a//b", "a/./b",
                                   "x" * 300, "d/" * 40 + "f", "a\x00b", "ok.txt"]),
                  st.text(max_size=40))
PIECES = st.fixed_dictionaries({
    "job": st.sampled_from(["1.0", "1.1", "2.0", 7, None]),
    "path": st.one_of(NAMES, st.integers(), st.none()),
    "mode": st.one_of(st.integers(min_value=-1, max_value=0o7777), st.none(), st.booleans()),
    "offset": st.one_of(st.integers(min_value=-2, max_value=8), st.none(), st.just(True)),
    "data": st.one_of(st.binary(max_size=16).map(lambda b: base64.b64encode(b).decode()),
                      st.just("%%%not base64"), st.none(), st.integers()),
}, optional={"dir": st.booleans()})


def _tree(root):
    return sorted(os.path.relpath(os.path.join(folder, name), root)
                  for folder, dirs, files in os.walk(root) for name in dirs + files)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pieces=st.lists(PIECES, max_size=12))
def test_no_piece_leads_out_and_nothing_is_left(tmp_path, pieces):
    spool = tmp_path / "spool"
    spool.mkdir(exist_ok=True)
    outside = _tree(tmp_path)
    with spool_net.Incoming(spool, ["1.0", "1.1"], max_bytes=64, max_files=5) as incoming:
        for piece in pieces:
            try:
                incoming.take(piece)
            except HTCondorValueError as refused:
                assert "spooling input files" in str(refused)
                break
        written = [p for p in _tree(incoming.root)]
        assert all(not p.startswith("..") for p in written)
    assert _tree(tmp_path) == sorted(set(outside) | {"spool/.incoming"})
    assert not list((spool / ".incoming").iterdir())


@pytest.mark.parametrize("path", ["../escape", "/abs", "a/../../b", "a//b", ".", "a/./b", "x\x00y", ""])
def test_escaping_names_are_refused_naming_the_job_and_the_name(path):
    with pytest.raises(HTCondorValueError) as refused:
        spool_net.confined("spooling input files", "3.0", path)
    assert "job 3.0" in str(refused.value) and repr(path) in str(refused.value)


def test_over_the_limit_is_refused_before_it_is_written(tmp_path):
    with spool_net.Incoming(tmp_path, ["1.0"], max_bytes=10, max_files=5) as incoming:
        incoming.take({"job": "1.0", "path": "a", "mode": 0o644, "offset": 0,
                       "data": base64.b64encode(b"12345678").decode()})
        with pytest.raises(HTCondorValueError, match="over 0 MB"):
            incoming.take({"job": "1.0", "path": "a", "mode": 0o644, "offset": 8,
                           "data": base64.b64encode(b"12345").decode()})
        assert (incoming.root / "1.0" / "a").read_bytes() == b"12345678"
