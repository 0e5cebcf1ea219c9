"""Fuzzed DAG files: the parser returns a DAG or raises our DagError, nothing else."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from jobledger.eventcore.dagman import parse_dag
from jobledger.eventcore.errors import DagError

KEYWORDS = ["JOB", "NODE", "PARENT", "CHILD", "RETRY", "UNLESS-EXIT", "SCRIPT", "PRE", "POST", "HOLD",
            "DEFER", "DEBUG", "PRE_SKIP", "VARS", "PRIORITY", "CATEGORY", "MAXJOBS", "ABORT-DAG-ON",
            "RETURN", "FINAL", "PROVISIONER", "SERVICE", "SPLICE", "SUBDAG", "EXTERNAL", "DONE", "NOOP",
            "DIR", "CONFIG", "SET_JOB_ATTR", "ENV", "GET", "SET", "INCLUDE", "DOT", "NODE_STATUS_FILE",
            "JOBSTATE_LOG", "SAVE_POINT_FILE", "REJECT", "ALL_NODES", "SUBMIT-DESCRIPTION", "{", "}",
            "CONNECT", "PIN_IN", "PIN_OUT", "S1", "S2", "A", "B", "C", "x.sub", "other.dag", "1", "-3", '"v"', 'n="v"', "=", "#"]
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


# Splices with pins: two splices of one file, CONNECTed, pins and edges drawn at random.
splice_word = st.sampled_from(["A", "B", "C", "S1", "S2", "0", "1", "2", "3", "-1", "x"])
splice_line = st.tuples(st.sampled_from(["PIN_IN", "PIN_OUT", "PARENT", "CHILD", "JOB", "SPLICE", "CONNECT"]),
                        st.lists(splice_word, max_size=4)).map(lambda t: " ".join((t[0], *t[1])))
splice_body = st.lists(splice_line, max_size=12).map(lambda ls: "JOB A a\nJOB B b\nJOB C c\n" + "\n".join(ls))
top_with_splices = st.lists(st.sampled_from(["CONNECT S1 S2", "CONNECT S2 S1", "CONNECT S1 S1",
                                             "PARENT S1 CHILD S2", "JOB A a", "CONNECT S1 A"]),
                            max_size=4).map(lambda ls: "SPLICE S1 other.dag\nSPLICE S2 other.dag\n" + "\n".join(ls))


@settings(max_examples=300, deadline=None)
@given(top=top_with_splices, other=splice_body)
def test_splice_pins_raise_only_dag_errors(top, other):
    try:
        dag = parse_dag("top.dag", read_from({"top.dag": top.encode(), "other.dag": other.encode()}))
    except DagError as err:
        assert err.source in ("top.dag", "other.dag") and err.line
    else:
        for node in dag.nodes.values():   # every edge is two-sided
            assert all(node.name in dag.nodes[child].parents for child in node.children)


@settings(max_examples=100, deadline=None)
@given(data=st.binary(max_size=300))
def test_random_bytes_give_dag_errors(data):
    try:
        parse_dag("top.dag", read_from({"top.dag": data}))
    except DagError:
        pass
