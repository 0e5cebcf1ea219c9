"""The DAG language: one test per command, and errors that name file:line."""

from __future__ import annotations

import pytest

from jobledger.eventcore.dagman import parse_dag
from jobledger.eventcore.dagman.graph import check_acyclic
from jobledger.eventcore.errors import DagError


def parse(text: str, **others: str):
    files = {"top.dag": text, **{name.replace("_", "."): body for name, body in others.items()}}

    def read(path: str) -> bytes:
        if path not in files:
            raise FileNotFoundError(2, "No such file or directory", path)
        value = files[path]
        return value if isinstance(value, bytes) else value.encode()
    return parse_dag("top.dag", read)


def error_of(text: str, **others: str) -> DagError:
    with pytest.raises(DagError) as caught:
        parse(text, **others)
    return caught.value


def test_job_and_node_with_dir_noop_done():
    dag = parse("# comment\n\nJOB A a.sub DIR work NOOP\nnode B b.sub DONE\nJob C c.sub\n")
    a, b, c = dag.nodes["A"], dag.nodes["B"], dag.nodes["C"]
    assert (a.submit, a.directory, a.noop, a.done) == ("a.sub", "work", True, False)
    assert (b.kind, b.done, c.kind) == ("JOB", True, "JOB")
    assert a.where.line == 3 and str(b.where) == "top.dag:4"


def test_inline_submit_description_by_job_and_by_name():
    dag = parse("SUBMIT-DESCRIPTION common {\n executable = /bin/true\n queue\n}\n"
                "JOB A common\nJOB B {\nexecutable = /bin/echo\n}\nJOB C c.sub\n")
    assert dag.nodes["A"].inline and dag.nodes["A"].submit == "common"
    assert dag.descriptions["common"] == "executable = /bin/true\nqueue\n"     # lines trimmed, as DAGMan's
    assert dag.nodes["B"].inline and dag.descriptions["B"] == "executable = /bin/echo\n"
    assert not dag.nodes["C"].inline


def test_inline_description_heredoc_and_options_on_the_closing_line():
    # HTCondor's DAG parser (dag_parser.cpp): "@=TAG" opens a description that "@TAG" closes;
    # blank lines and comments inside are dropped; a node's options follow the closing token
    dag = parse("SUBMIT-DESCRIPTION t @=desc\n  executable = /bin/true\n\n  # a comment\n"
                "  // another\n  arguments = $(code)\n@desc\nJOB A t\n"
                "JOB B @=x\n executable = /bin/echo\n@x DIR work NOOP\n"
                "FINAL F {\n executable = /bin/true\n} DIR fin\nSERVICE S @=s\nexecutable = /bin/sleep\n@s\n")
    assert dag.descriptions["t"] == "executable = /bin/true\narguments = $(code)\n"
    assert dag.nodes["A"].inline and dag.nodes["A"].submit == "t"
    b = dag.nodes["B"]
    assert b.inline and dag.descriptions["B"] == "executable = /bin/echo\n"
    assert (b.directory, b.noop) == ("work", True)
    assert dag.nodes["F"].inline and dag.nodes["F"].directory == "fin"
    assert dag.nodes["S"].inline and dag.descriptions["S"] == "executable = /bin/sleep\n"


def test_inline_description_without_its_closing_token_names_the_opening_line():
    err = error_of("JOB A x.sub\nSUBMIT-DESCRIPTION d @=end\nexecutable = /bin/true\n@ending\n")
    assert (err.source, err.line) == ("top.dag", 2) and "'@end'" in str(err)
    err = error_of("SUBMIT-DESCRIPTION d @=\nexecutable = /bin/true\n")
    assert "closing token" in str(err)


def test_parent_child_many_to_many_and_forward_references():
    dag = parse("PARENT A B CHILD C D\nJOB A x\nJOB B x\nJOB C x\nJOB D x\nPARENT A child C\n")
    assert dag.nodes["A"].children == ["C", "D"] and dag.nodes["D"].parents == ["A", "B"]


def test_retry_with_unless_exit():
    dag = parse("JOB A x\nJOB B x\nRETRY A 3\nRETRY B 2 UNLESS-EXIT 42\n")
    assert (dag.nodes["A"].retry, dag.nodes["A"].retry_unless_exit) == (3, None)
    assert (dag.nodes["B"].retry, dag.nodes["B"].retry_unless_exit) == (2, 42)


def test_scripts_pre_post_hold_with_defer_and_debug():
    dag = parse("JOB A x\nSCRIPT PRE A pre.sh $JOB $RETRY\n"
                "SCRIPT DEFER 4 30 DEBUG post.log ALL POST A post.sh $RETURN\n"
                "SCRIPT HOLD A hold.sh\n")
    scripts = dag.nodes["A"].scripts
    assert scripts["PRE"].arguments == ("$JOB", "$RETRY")
    post = scripts["POST"]
    assert (post.defer_status, post.defer_time, post.debug_file, post.debug_type) == (4, 30, "post.log", "ALL")
    assert scripts["HOLD"].executable == "hold.sh"


def test_pre_skip_priority_category_maxjobs_abort():
    dag = parse("JOB A x\nPRE_SKIP A 3\nPRIORITY A -5\nCATEGORY A big\nMAXJOBS big 2\n"
                "ABORT-DAG-ON A 7 RETURN 9\n")
    a = dag.nodes["A"]
    assert (a.pre_skip, a.priority, a.category, a.abort_on) == (3, -5, "big", (7, 9))
    assert dag.max_jobs == {"big": 2}


def test_vars_quoting_prepend_and_last_wins():
    dag = parse('JOB A x\nVARS A a="1" b = "say \\"hi\\" \\\\ there"\nVARS A PREPEND c="3"\n'
                'VARS A a="again"\n')
    assert dag.nodes["A"].vars == [("b", 'say "hi" \\ there', False), ("c", "3", True),
                                   ("a", "again", False)]


def test_all_nodes_skips_final_and_last_command_wins():
    dag = parse('JOB A x\nJOB B x\nFINAL F f\nVARS A name="A"\nVARS ALL_NODES name="X"\n'
                'VARS B name="B"\nRETRY all_nodes 2\n')
    assert dag.nodes["A"].vars == [("name", "X", False)]
    assert dag.nodes["B"].vars == [("name", "B", False)]
    assert dag.nodes["F"].vars == [] and dag.nodes["F"].retry == 0
    assert dag.nodes["A"].retry == 2


def test_final_provisioner_service_subdag():
    dag = parse("JOB A x\nFINAL F f.sub DIR fin\nPROVISIONER P p.sub\nSERVICE S s.sub\n"
                "SUBDAG EXTERNAL D inner.dag DIR sub NOOP\n")
    assert dag.final.name == "F" and dag.final.directory == "fin"
    assert [n.name for n in dag.of_kind("PROVISIONER", "SERVICE")] == ["P", "S"]
    assert (dag.nodes["D"].kind, dag.nodes["D"].submit, dag.nodes["D"].noop) == ("SUBDAG", "inner.dag", True)


def test_splice_names_and_edges_to_its_ends():
    dag = parse("JOB A x\nJOB Z x\nSPLICE S s.dag DIR sd\nPARENT A CHILD S\nPARENT S CHILD Z\n",
                **{"sd/s_dag": "JOB X x.sub\nJOB Y y.sub\nJOB W w.sub\nPARENT X CHILD Y W\nSPLICE T t.dag\n"
                   "PARENT Y CHILD T\n",
                   "sd/t_dag": "JOB Q q.sub\n"})
    assert set(dag.nodes) == {"A", "Z", "S+X", "S+Y", "S+W", "S+T+Q"}
    assert dag.nodes["A"].children == ["S+X"]
    assert sorted(dag.nodes["Z"].parents) == ["S+T+Q", "S+W"]
    assert dag.nodes["S+X"].directory == "sd"


SPLICE_A = "JOB A1 a1.sub\nJOB A2 a2.sub\nPIN_OUT A1 1\nPIN_OUT A2 2\n"
SPLICE_B = ("JOB B1 b.sub\nJOB B2 b.sub\nJOB B3 b.sub\nJOB B4 b.sub\n"
            "PIN_IN B1 1\nPIN_IN B2 1\nPIN_IN B3 2\nPIN_IN B4 2\n"
            "PIN_OUT B1 1\nPIN_OUT B2 2\nPIN_OUT B3 3\nPIN_OUT B4 4\n")
SPLICE_C = "JOB C1 c.sub\nINCLUDE pins.inc\n"


def test_connect_joins_splices_pin_by_pin():
    dag = parse("SPLICE A a.dag\nSPLICE B b.dag\nSPLICE C c.dag\nCONNECT A B\nCONNECT B C\n",
                a_dag=SPLICE_A, b_dag=SPLICE_B, c_dag=SPLICE_C,
                pins_inc="PIN_IN C1 1\nPIN_IN C1 2\nPIN_IN C1 3\nPIN_IN C1 4\n")
    assert dag.nodes["A+A1"].children == ["B+B1", "B+B2"]
    assert dag.nodes["A+A2"].children == ["B+B3", "B+B4"]
    assert dag.nodes["C+C1"].parents == ["B+B1", "B+B2", "B+B3", "B+B4"]
    assert dag.nodes["B+B1"].parents == ["A+A1"]


def test_pins_without_connect_are_ignored_and_a_splice_connects_twice():
    dag = parse("SPLICE A a.dag\nSPLICE B b.dag\nSPLICE B2 b.dag\nJOB Z z\n"
                "CONNECT A B\nCONNECT A B2\nPARENT Z CHILD A\n",
                a_dag=SPLICE_A + "PIN_IN A1 1\n", b_dag=SPLICE_B.replace("PIN_OUT B4 4\n", ""))
    assert dag.nodes["A+A1"].children == ["B+B1", "B+B2", "B2+B1", "B2+B2"]
    assert dag.nodes["Z"].children == ["A+A1", "A+A2"]


@pytest.mark.parametrize("top,a,b,words", [
    ("SPLICE A a.dag\nSPLICE B b.dag\nCONNECT A B\n", SPLICE_A, "JOB B1 b\nPIN_IN B1 1\n",
     "pin counts differ: splice 'A' has 2 PIN_OUT, splice 'B' has 1 PIN_IN"),
    ("SPLICE A a.dag\nSPLICE B b.dag\nCONNECT A B\n", "JOB A1 a\n", SPLICE_B, "splice 'A' has no PIN_OUT"),
    ("SPLICE A a.dag\nSPLICE B b.dag\nCONNECT A B\n", SPLICE_A, "JOB B1 b\n", "splice 'B' has no PIN_IN"),
    ("SPLICE A a.dag\nSPLICE B b.dag\nCONNECT A B\n", SPLICE_A, "JOB B1 b\nPIN_IN B1 1\nPIN_IN B1 3\n",
     "no node for PIN_IN 2"),
    ("SPLICE A a.dag\nSPLICE B b.dag\nCONNECT A B\n", SPLICE_A,
     "JOB B1 b\nJOB B2 b\nJOB B3 b\nPIN_IN B1 1\nPIN_IN B2 2\n", "node 'B+B3' of splice 'B' has no parent"),
    ("SPLICE A a.dag\nJOB B b\nCONNECT A B\n", SPLICE_A, "", "unknown splice 'B'"),
    ("SPLICE A a.dag\nSPLICE B b.dag\nCONNECT A B C\n", SPLICE_A, SPLICE_B, "expected CONNECT"),
])
def test_connect_errors_name_the_connect_line(top, a, b, words):
    err = error_of(top, a_dag=a, b_dag=b)
    assert (err.source, err.line) == ("top.dag", 3) and words in err.message


def test_pin_errors_name_the_splice_file_and_line():
    err = error_of("SPLICE A a.dag\n", a_dag="JOB A1 a\nPIN_OUT A9 1\n")
    assert (err.source, err.line) == ("a.dag", 2) and "unknown node 'A9'" in err.message


def test_connect_can_close_a_cycle():
    err = error_of("SPLICE A a.dag\nSPLICE B b.dag\nCONNECT A B\nCONNECT B A\n",
                   a_dag="JOB A1 a\nPIN_IN A1 1\nPIN_OUT A1 1\n", b_dag="JOB B1 b\nPIN_IN B1 1\nPIN_OUT B1 1\n")
    assert "cycle" in err.message and err.source == "top.dag"


def test_done_config_set_job_attr_env():
    dag = parse("JOB A x\nDONE A\nCONFIG my.config\nCONFIG my.config\nSET_JOB_ATTR Foo = \"bar\"\n"
                "ENV GET PATH,HOME USER\nENV SET A=1;B=two\n")
    assert dag.nodes["A"].done and dag.config == "my.config"
    assert dag.set_job_attrs == {"Foo": '"bar"'}
    assert dag.env_get == ["PATH", "HOME", "USER"] and dag.env_set == [("A", "1"), ("B", "two")]


def test_include_is_inline_and_errors_name_the_included_file():
    dag = parse("JOB A x\nINCLUDE more.dag\nPARENT A CHILD B\n", more_dag="JOB B x\n")
    assert dag.nodes["B"].where.source == "more.dag"
    err = error_of("JOB A x\nINCLUDE more.dag\n", more_dag="JOB B x\nRETRY Q 1\n")
    assert (err.source, err.line) == ("more.dag", 2)


def test_dot_node_status_jobstate_save_point_reject():
    dag = parse("JOB A x\nDOT d.dot UPDATE DONT-OVERWRITE INCLUDE h.dot\nNODE_STATUS_FILE st 5 ALWAYS-UPDATE\n"
                "JOBSTATE_LOG js.log\nSAVE_POINT_FILE A\nREJECT\n")
    assert dag.dot == {"file": "d.dot", "update": True, "overwrite": False, "include": "h.dot"}
    assert dag.node_status_file == {"file": "st", "min_update": 5, "always_update": True}
    assert dag.jobstate_log == "js.log" and dag.nodes["A"].save_point == "A-top.dag.save"
    assert dag.reject.line == 6


@pytest.mark.parametrize("text,line,words", [
    ("JOB A x\nPARENT A CHILD B\n", 2, "unknown node 'B'"),
    ("JOB A x\nFROB A\n", 2, "unknown DAG command 'FROB'"),
    ("JOB A x\nJOB B x\nPARENT A CHILD B\nPARENT B CHILD A\n", 3, "cycle in the DAG"),
    ("JOB A x\nJOB A y\n", 2, "defined twice"),
    ("JOB A x\nRETRY A many\n", 2, "integer"),
    ("JOB A x\nRETRY A 1 UNLESS 3\n", 2, "expected RETRY"),
    ("JOB A x\nVARS A x=\"unclosed\n", 2, 'name="value"'),
    ("JOB A x\nVARS A queue_x=\"1\"\n", 2, "may not begin with 'queue'"),
    ("JOB A x\nSCRIPT MIDDLE A s\n", 2, "expected SCRIPT"),
    ("JOB A x\nABORT-DAG-ON A 1 RETURN 300\n", 2, "0..255"),
    ("JOB A x\nFINAL F f\nFINAL G g\n", 3, "only one FINAL"),
    ("JOB A x\nFINAL F f\nPARENT A CHILD F\n", 3, "FINAL node 'F' cannot be in PARENT/CHILD"),
    ("JOB A x\nPARENT A\n", 2, "PARENT without CHILD"),
    ("JOB A {\nexecutable = x\n", 1, "no closing"),
    ("JOB A x\nCONFIG a\nCONFIG b\n", 3, "second CONFIG"),
    ("JOB A x\nPARENT A CHILD A\n", 2, "its own parent"),
    ("JOB A x BOGUS\n", 1, "unexpected 'BOGUS'"),
    ("JOB A+B x\n", 1, "not a valid node name"),
    ("JOB A x\nPRE_SKIP A 0\n", 2, "1..255"),
    ("JOB A x\nCONNECT S1 S2\n", 2, "unknown splice 'S1'"),
    ("JOB A x\nPIN_IN B 1\n", 2, "unknown node 'B'"),
    ("JOB A x\nPIN_OUT A 0\n", 2, "1..inf"),
    ("JOB A x\nPIN_OUT A one\n", 2, "integer"),
    ("JOB A x\nPIN_IN A 1 2\n", 2, "expected PIN_IN node pin-number"),
])
def test_errors_name_file_and_line(text, line, words):
    err = error_of(text)
    assert (err.source, err.line) == ("top.dag", line)
    assert words in err.message
    assert str(err).startswith(f"top.dag:{line}: ")


def test_cycle_through_three_nodes_is_named():
    err = error_of("JOB A x\nJOB B x\nJOB C x\nJOB D x\nPARENT D CHILD A\nPARENT A CHILD B\n"
                   "PARENT B CHILD C\nPARENT C CHILD A\n")
    assert "A -> B -> C -> A" in err.message and err.line == 6


def test_missing_include_and_non_utf8():
    err = error_of("JOB A x\nINCLUDE gone.dag\n")
    assert (err.source, err.line) == ("top.dag", 2) and "gone.dag" in err.message
    err = error_of(b"JOB A x\nJOB \xff y\n")
    assert err.source == "top.dag" and "UTF-8" in err.message


def test_include_loop_is_bounded():
    err = error_of("INCLUDE top.dag\n")
    assert "nested deeper" in err.message


def test_rescue_dag_applies_done_and_retry():
    files = {"top.dag": b"JOB A x\nJOB B x\nRETRY B 5\nPARENT A CHILD B\n",
             "top.dag.rescue001": b"# Rescue DAG\nDONE A\nRETRY B 2\n"}
    dag = parse_dag("top.dag", files.__getitem__, rescue="top.dag.rescue001")
    assert dag.nodes["A"].done and dag.nodes["B"].retry == 2
    files["bad.rescue"] = b"JOB C x\n"
    with pytest.raises(DagError, match="bad.rescue:1: a rescue DAG holds only DONE and RETRY"):
        parse_dag("top.dag", files.__getitem__, rescue="bad.rescue")


def test_topological_order_covers_every_node():
    dag = parse("JOB A x\nJOB B x\nJOB C x\nPARENT C CHILD B\nPARENT B CHILD A\n")
    assert check_acyclic(dag, {}) == ["C", "B", "A"]


def test_a_quoted_submit_file_and_dir_as_bps_writes_them():
    # HTCondor's DAGMan (parse.cpp, next_possibly_quoted_token): the submit file and the DIR
    # value may be in double quotes, spaces and all; LSST BPS writes JOB name "jobs/label/name.sub"
    dag = parse('JOB A "jobs/calib rate/a.sub"\nFINAL F "jobs/final/f.sub" DIR "my dir"\n'
                'JOB B b.sub\nSUBDAG EXTERNAL S "inner.dag" DIR "subdags/s"\n')
    a, f, s = dag.nodes["A"], dag.nodes["F"], dag.nodes["S"]
    assert (a.submit, f.submit, f.directory, s.submit, s.directory) == (
        "jobs/calib rate/a.sub", "jobs/final/f.sub", "my dir", "inner.dag", "subdags/s")
    assert "no closing quote" in str(error_of('JOB A "a.sub\n'))
    assert "top.dag" in str(error_of('JOB A "a.sub\n'))


def test_vars_values_in_either_quote_or_none():
    # HTCondor's DAG lexer takes name=value, name='value' and name="value" alike
    dag = parse("JOB A a.sub\nVARS A code=1 who='a b' what=\"x \\\" y\" +Attr = 7\n")
    assert dag.nodes["A"].vars == [("code", "1", False), ("who", "a b", False), ("what", 'x " y', False),
                                   ("+Attr", "7", False)]
    assert "name=\"value\"" in str(error_of("JOB A a.sub\nVARS A code=\n"))


def test_submit_descriptions_are_one_namespace_for_splices_and_the_first_wins():
    # as HTCondor's DAGMan: a splice's JOB names the DAG's description; a name defined
    # again (here, in the splice) is ignored; a description may come after its nodes
    dag = parse("JOB BEFORE sleep\nSUBMIT-DESCRIPTION sleep {\narguments = 0\n}\nJOB INC inc\n"
                "SPLICE S s.dag\nINCLUDE i.inc\n",
                s_dag="SUBMIT-DESCRIPTION sleep {\narguments = 99\n}\nJOB B sleep\n",
                i_inc="SUBMIT-DESCRIPTION inc {\narguments = 1\n}\n")
    assert dag.descriptions["sleep"] == "arguments = 0\n" and dag.descriptions["inc"] == "arguments = 1\n"
    for name, submit in (("BEFORE", "sleep"), ("S+B", "sleep"), ("INC", "inc")):
        assert dag.nodes[name].inline and dag.nodes[name].submit == submit
