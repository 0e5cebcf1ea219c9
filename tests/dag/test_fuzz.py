"""Fuzzed DAG files: the parser returns a DAG or raises our DagError, nothing else."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from eventcore.dag import parse_dag
from eventcore.errors import DagError

KEYWORDS = ["JOB", "NODE", "PARENT", "CHILD", "RETRY", "UNLESS-EXIT", "SCRIPT", "PRE", "POST", "HOLD",
            "DEFER", "DEBUG", "PRE_SKIP", "VARS", "PRIORITY", "CATEGORY", "MAXJOBS", "ABORT-DAG-ON",
            "RETURN", "FINAL", "PROVISIONER", "SERVICE", "SPLICE", "SUBDAG", "EXTERNAL", "DONE", "NOOP",
            "DIR", "CONFIG", "SET_JOB_ATTR", "ENV", "GET", "SET", "INCLUDE", "DOT", "NODE_STATUS_FILE",
            "JOBSTATE_LOG", "SAVE_POINT_FILE", "REJECT", "ALL_NODES", "SUBMIT-DESCRIPTION", "{", "}",
            "A", "B", "C", "x.sub", "other.dag", "1", "-3", '"v"', 'n="v"', "=", "#"]
word = st.one_of(st.sampled_from(KEYWORDS), st.text(max_size=6))
line = st.lists(word, min_size=0, max_size=7).map(" ".join)
dag_text = st.lists(line, max_size=25).map("\n".join)


def read_from(files: dict):
    def read(path: str) -> bytes:
        if path not in files:
            raise FileNotFoundError(2, "No such file or directory", path)
        return files[path]
    return read


@settings(max_examples=300, deadline=None)
@given(top=dag_text, other=dag_text)
def test_parser_raises_only_dag_errors(top, other):
    files = {"top.dag": top.encode("utf-8", "surrogatepass"), "other.dag": other.encode("utf-8", "surrogatepass")}
    try:
        dag = parse_dag("top.dag", read_from(files))
    except DagError as err:
        assert err.source and str(err).startswith(err.source)
    else:
        assert all(node.name for node in dag.nodes.values())


@settings(max_examples=100, deadline=None)
@given(data=st.binary(max_size=300))
def test_random_bytes_give_dag_errors(data):
    try:
        parse_dag("top.dag", read_from({"top.dag": data}))
    except DagError:
        pass
