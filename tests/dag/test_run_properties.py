"""Properties of DAGMan's decisions over random DAGs and random job outcomes.

Whatever the shape, the retries and the exit codes: no node's job is
submitted before all its parents are DONE, no node is submitted again
after it succeeded, -maxjobs is never exceeded, and the run ends with every
node DONE, FAILED or FUTILE and the exit code HTCondor's rule gives.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from jobledger.eventcore.dagman import parse_dag
from jobledger.eventcore.dagman.run import DONE, FAILED, FUTILE, TERMINATED, DagRun, RunScript, SubmitJob, Throttles


@st.composite
def dags(draw):
    n = draw(st.integers(1, 12))
    lines = [f"JOB N{i} x.sub" for i in range(n)]
    for child in range(1, n):
        for parent in draw(st.sets(st.integers(0, child - 1), max_size=3)):
            lines.append(f"PARENT N{parent} CHILD N{child}")
    for i in range(n):
        retries = draw(st.integers(0, 2))
        if retries:
            lines.append(f"RETRY N{i} {retries}")
        if draw(st.booleans()):
            lines.append(f"SCRIPT POST N{i} post.sh")
    return n, "\n".join(lines) + "\n"


@settings(max_examples=100, deadline=None)
@given(shape=dags(), codes=st.lists(st.integers(0, 2), min_size=200, max_size=200),
       max_jobs=st.integers(0, 3))
def test_runs_end_and_respect_order_and_throttles(shape, codes, max_jobs):
    n, text = shape
    run = DagRun(parse_dag("p.dag", lambda _: text.encode()), Throttles(max_jobs=max_jobs))
    outcomes = iter(codes)
    cluster, live, succeeded = 100, {}, set()
    for _ in range(500):
        for action in run.actions(0):
            if isinstance(action, SubmitJob):
                node = run.dag.nodes[action.node]
                assert all(run.nodes[p].status == DONE for p in node.parents)
                assert action.node not in succeeded
                cluster += 1
                run.submitted(action.node, cluster, 1)
                live[cluster] = action.node
            elif isinstance(action, RunScript):
                run.script_done(action.node, action.kind, next(outcomes, 0) % 2, 0)
                if run.nodes[action.node].status == DONE:
                    succeeded.add(action.node)
        assert not max_jobs or len(live) <= max_jobs
        if run.exit_code is not None:
            break
        if live:
            first = min(live)
            name = live.pop(first)
            run.job_event(first, 0, TERMINATED, 0, next(outcomes, 0))
            if run.nodes[name].status == DONE:
                succeeded.add(name)
    assert run.exit_code is not None
    statuses = {r.status for r in run.nodes.values()}
    assert statuses <= {DONE, FAILED, FUTILE}
    assert run.exit_code == (0 if statuses == {DONE} else 1)
