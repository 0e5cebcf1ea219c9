"""Choosing the rescue DAG a run starts from, as HTCondor's DAGMan does (dagman_main.cpp):
-RescueFile names one (a file of this DAG's numbered ones renames the newer to ``.old`` and
passes its number to sub-DAGs as -DoRescueFrom; any other file renames them all),
-DoRescueFrom N renames the ones newer than N; the options that cannot go together are
refused as HTCondor's DagmanOptions::checkMutualExclusion refuses them."""

from __future__ import annotations

import json

import pytest

import jobledger as htcondor
from jobledger.condor_cli.submit_dag import parse
from jobledger.condor_cli.args import Failed
from jobledger.daemons.dagman.files import extract_rescue_num
from jobledger.daemons.dagman.submit_dag import exclusion_problem
from tests.dag.test_dag_user_view import command
from tests.dag.test_dagman import run_dag, script, write

DAG = ("SUBMIT-DESCRIPTION touch @=desc\nexecutable = {exe}\narguments = \"$(dag_node_name)\"\n"
       "universe = local\n@desc\nJOB A touch\nJOB B touch\nJOB C touch\n")


def _setup(tmp_path):
    script(tmp_path / "touch.sh", 'touch "$1.touched"\n')
    for number in range(1, 5):
        write(tmp_path / f"d.dag.rescue{number:03d}", "DONE A\nDONE B\n")
    write(tmp_path / "custom.rescue", "DONE A\n")
    return DAG.format(exe=tmp_path / "touch.sh")


def _touched(tmp_path):
    return sorted(p.name.split(".")[0] for p in tmp_path.glob("*.touched"))


def _rescues(tmp_path):
    return sorted(p.name for p in tmp_path.glob("*.rescue*"))


def test_rescue_file_of_this_dag_renames_the_newer_ones(pool, tmp_path):
    _, ad = run_dag(pool, tmp_path, _setup(tmp_path), {"RescueFile": "d.dag.rescue002"})
    assert ad["ExitCode"] == 0
    assert _touched(tmp_path) == ["C"]            # A and B are DONE in rescue002
    assert _rescues(tmp_path) == ["custom.rescue", "d.dag.rescue001", "d.dag.rescue002",
                                  "d.dag.rescue003.old", "d.dag.rescue004.old"]
    assert json.loads((tmp_path / "d.dag.metrics").read_text())["rescue_dag_number"] == 2
    out = (tmp_path / "d.dag.dagman.out").read_text()
    assert "Extracted rescue DAG number: 2" in out
    assert "Rescue DAG file specified; running d.dag.rescue002 in combination with normal DAG file" in out


def test_a_rescue_file_of_another_name_renames_them_all(pool, tmp_path):
    _, ad = run_dag(pool, tmp_path, _setup(tmp_path), {"RescueFile": "custom.rescue"})
    assert ad["ExitCode"] == 0
    assert _touched(tmp_path) == ["B", "C"]
    assert _rescues(tmp_path) == ["custom.rescue"] + [f"d.dag.rescue{n:03d}.old" for n in range(1, 5)]
    assert json.loads((tmp_path / "d.dag.metrics").read_text())["rescue_dag_number"] == 0


def test_extract_rescue_num():
    assert extract_rescue_num("d.dag.rescue004", "d.dag") == 4
    assert extract_rescue_num("d.dag.rescue", "d.dag") == 0
    assert extract_rescue_num("custom.rescue", "d.dag") == 0
    assert extract_rescue_num("d.dag.rescue12x", "d.dag") == 12


@pytest.mark.parametrize("options,message", [
    ({"SaveFile": "s", "DoRecovery": True}, "DoRecovery can not be used with the following option: SaveFile"),
    ({"RescueFile": "r", "DoRescueFrom": 1}, "DoRescueFrom can not be used with the following option: RescueFile"),
    ({"RescueFile": "r", "DoRecovery": True, "SaveFile": "s"},
     "SaveFile can not be used with the following options: DoRecovery,RescueFile"),
])
def test_from_dag_refuses_options_that_exclude_each_other(tmp_path, options, message):
    write(tmp_path / "e.dag", "# empty\n")
    with pytest.raises(RuntimeError, match=message):
        htcondor.Submit.from_dag(str(tmp_path / "e.dag"), options)
    assert not (tmp_path / "e.dag.condor.sub").exists()


def test_condor_submit_dag_refuses_flags_that_exclude_each_other(pool, tmp_path):
    write(tmp_path / "e.dag", "# empty\n")
    done = command(pool, tmp_path, "condor_submit_dag", "-DoRescueFrom", "1", "-load_save", "s", "e.dag", ok=False)
    assert done.returncode == 1
    assert "Error: -load_save can not be used with the following flag: -DoRescueFrom" in done.stderr
    assert not (tmp_path / "e.dag.condor.sub").exists()
    with pytest.raises(Failed, match="-RescueFile can not be used with the following flag: -DoRescueFrom"):
        parse(["-dorescuefrom", "1", "-RescueFile", "r", "e.dag"])
    assert exclusion_problem(["maxjobs", "DoRecovery", "force"]) is None
    assert parse(["-DoRecovery", "-RescueFile", "r", "e.dag"])[1] == {"dorecov": True, "rescuefile": "r"}
