"""condor_submit_dag's check of an earlier run's files (make_room): refused without -f, unless
the DAG runs again from a rescue DAG or a save point file (load_save); -f clears them."""

from __future__ import annotations

import pytest

from jobledger.daemons.dagman.submit_dag import DagOutputExists, make_room


def test_an_earlier_runs_files_refuse_a_new_run_but_not_a_run_from_a_save_point(tmp_path):
    (tmp_path / "d.dag").write_text("JOB A a.sub\n")
    for suffix in (".condor.sub", ".dagman.log"):
        (tmp_path / f"d.dag{suffix}").write_text("")
    with pytest.raises(DagOutputExists) as refused:
        make_room("d.dag", {}, str(tmp_path))
    assert refused.value.problems == ['ERROR: "d.dag.condor.sub" already exists.',
                                      'ERROR: "d.dag.dagman.log" already exists.']
    make_room("d.dag", {"load_save": "A-d.dag.save"}, str(tmp_path))      # a run again: allowed
    make_room("d.dag", {"update_submit": True}, str(tmp_path))
    assert (tmp_path / "d.dag.condor.sub").exists()
    make_room("d.dag", {"force": True}, str(tmp_path))
    assert not (tmp_path / "d.dag.condor.sub").exists() and not (tmp_path / "d.dag.dagman.log").exists()
