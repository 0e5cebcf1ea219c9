"""Any text given as a rescue file or node status file ends in a result or
our DAGFileError, never another exception."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from jobledger.eventcore.dags import DAG, SimpleFormatter, parse_node_status, parse_rescue, rescue_text
from jobledger.eventcore.errors import DAGFileError

rescue_words = st.sampled_from(["DONE", "RETRY", "done", "UNLESS-EXIT", "#", "a:0", "b:1", "x", "3", "-1",
                                ":", "a:b:c", "\t", "JOB"])
rescue_like = st.lists(st.lists(rescue_words, max_size=6).map(" ".join), max_size=8).map("\n".join)
status_like = st.lists(st.sampled_from(['[', ']', 'Type = "DagStatus";', 'Type = "NodeStatus";',
                                        'Type = "StatusEnd";', 'DagStatus = 3;', 'NodeStatus = 9;',
                                        'Node = "A";', 'Node = 4;', 'EndTime = 5;', '/* x */', '{', '"',
                                        'RetryCount = "x";', 'DagStatus = true;']), max_size=20).map("\n".join)


@settings(max_examples=150, deadline=None)
@given(st.one_of(rescue_like, st.text()))
def test_rescue_text_gives_a_state_or_our_error(text):
    dag = DAG()
    dag.layer(name="a", vars=[{}] * 2)
    try:
        state = parse_rescue(text, SimpleFormatter(), "fuzz.rescue001")
    except DAGFileError as error:
        assert error.path == "fuzz.rescue001" and error.line >= 1
        return
    rescue_text(dag, text, SimpleFormatter())
    assert set(dag._nodes["a"].done) == set(state.done.get("a", ()))


@settings(max_examples=150, deadline=None)
@given(st.one_of(status_like, st.text()))
def test_node_status_text_gives_a_report_or_our_error(text):
    try:
        report = parse_node_status(text, "fuzz.status")
    except DAGFileError as error:
        assert error.path == "fuzz.status"
        return
    assert all(state.name == name for name, state in report.nodes.items())
