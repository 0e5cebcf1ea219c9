"""Building and writing DAGs: htcondor.dags' API, ours beside htcondor2's.

Rows (each a 10,000-node fan-out/fan-in DAG: one root, a 10,000-node layer
with one VARS entry per node, one merge node; plus a 10,000-node chain of
OneToOne layers 100 x 100):
  build        DAG() + layers + edges, nodes per second
  render       the DAG file's lines (``DAGWriter.yield_dag_file_lines``)
  write_dag    the files on disk (tmpfs or page cache)

Ours and htcondor2's run alternately RUNS times; the table shows the best
run of each and the ratio ours/theirs (> 1: we are faster).
``python -m bench dags``.
"""

from __future__ import annotations

import tempfile
import time

RUNS = 5
WIDTH = 10_000


def fan(dags, submit):
    dag = dags.DAG()
    root = dag.layer(name="root", submit_description=submit)
    work = root.child_layer(name="work", submit_description=submit, vars=[{"i": str(i)} for i in range(WIDTH)])
    work.child_layer(name="merge", submit_description=submit)
    return dag


def chain(dags, submit):
    dag = dags.DAG()
    layer = dag.layer(name="step0", submit_description=submit, vars=[{"i": str(i)} for i in range(100)])
    for step in range(1, 100):
        layer = layer.child_layer(name=f"step{step}", submit_description=submit, edge=dags.OneToOne(),
                                  vars=[{"i": str(i)} for i in range(100)])
    return dag


def _best(fn) -> float:
    best = float("inf")
    for _ in range(RUNS):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _cases(dags, writer_module, submit_class):
    submit = submit_class({"executable": "/bin/true"})
    out = {}
    for shape, build in (("fan", fan), ("chain", chain)):
        built = build(dags, submit)
        out[f"{shape} build"] = _best(lambda: build(dags, submit))
        out[f"{shape} render"] = _best(lambda: list(writer_module.DAGWriter(built).yield_dag_file_lines()))
        with tempfile.TemporaryDirectory() as tmp:
            out[f"{shape} write_dag"] = _best(lambda: dags.write_dag(built, tmp))
    return out


def main() -> None:
    import jobledger
    import jobledger.dags as ours
    import jobledger.dags.writer as our_writer
    ours_times = _cases(ours, our_writer, jobledger.Submit)
    try:
        import htcondor2
        import htcondor2.dags as theirs
        import htcondor2.dags.writer as their_writer
        their_times = _cases(theirs, their_writer, htcondor2.Submit)
    except ImportError:
        their_times = {}
    nodes = WIDTH + 2
    print("| case | nodes | ours nodes/s | htcondor2 nodes/s | ours/theirs |")
    print("|---|---:|---:|---:|---:|")
    for case, seconds in ours_times.items():
        count = nodes if case.startswith("fan") else 10_000
        theirs_s = their_times.get(case)
        their_rate = f"{count / theirs_s:,.0f}" if theirs_s else "-"
        ratio = f"{theirs_s / seconds:.2f}" if theirs_s else "-"
        print(f"| {case} | {count:,} | {count / seconds:,.0f} | {their_rate} | {ratio} |")


if __name__ == "__main__":
    main()
