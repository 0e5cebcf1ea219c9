"""examples/ run as they are (the seed tutorials with only the import changed, and make demo)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.pool.conftest import pool_processes, wait_until

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_example(name: str, cwd: Path, timeout: float = 120) -> str:
    env = {k: v for k, v in os.environ.items() if k != "CONDOR_CONFIG"}
    done = subprocess.run([sys.executable, str(EXAMPLES / name)], cwd=cwd, env=env, timeout=timeout,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_personal_pool_tutorial(tmp_path):
    out = run_example("personal_pool_tutorial.py", tmp_path)
    lines = out.splitlines()
    assert lines[0] == "PersonalPool(local_dir=./personal-condor, state=PersonalPoolState.INITIALIZED)"
    assert lines[1] == "PersonalPool(local_dir=./personal-condor, state=PersonalPoolState.READY)"
    assert "ClusterID is 1" in out
    ads = [line for line in lines if line.startswith("[ ") and "JobStatus" in line]
    assert len(ads) == 10 and all("ServerTime" in ad and "ClusterId = 1" in ad for ad in ads)
    assert "state=PersonalPoolState.STOPPED" in out
    assert lines[-1] == str(tmp_path / "another-personal-condor")
    for local in ("personal-condor", "another-personal-condor"):
        wait_until(lambda: not pool_processes(tmp_path / local), 15, what=f"{local} to stop")


def test_schedd_tutorial(tmp_path):
    out = run_example("schedd_tutorial.py", tmp_path)
    assert 'foo = "bar"' in out and "foo = 42" in out
    assert "TotalAlreadyDone = 1" in out          # holding a held-by-user job again
    assert "Hello world" in out
    assert "ExitCode = 0" in out


def test_collector_tutorial(tmp_path):
    out = run_example("collector_tutorial.py", tmp_path)
    assert 'Name = "DemoAd"' in out and 'MyType = "Demo"' in out and "foo = 1" in out
    assert "schedd.sock>" in out


def test_job_event_log_examples(tmp_path):
    out = run_example("job_event_log.py", tmp_path)
    assert out.splitlines() == ["Job terminated normally with return value 0."] * 2


def test_demo(tmp_path):
    out = run_example("demo.py", tmp_path)
    assert "audit: OK" in out
    assert out.count("terminated (exit code 0)") == 8
    assert "evicted (requeued)" in out             # the flaky job's first try


def test_dag_creation_tutorial(tmp_path):
    out = run_example("dag_creation_tutorial.py", tmp_path)
    dag_dir = tmp_path / "mandelbrot-dag"
    assert f"DAG description file: {dag_dir / 'dagfile.dag'}" in out
    assert sorted(p.name for p in dag_dir.iterdir()) == ["dagfile.dag", "montage.sub", "tile.sub"]
    assert "PARENT tile:0 tile:1 tile:2 tile:3 CHILD montage:0" in out
    assert 'VARS tile:3 w="1.5" x="0.75" y="-0.75" tile_x="00001" tile_y="00001"' in out
    assert "executable = goatbrot" in (dag_dir / "tile.sub").read_text()


@pytest.mark.oracle
def test_dag_creation_tutorial_writes_what_htcondor2_writes(tmp_path):
    pytest.importorskip("htcondor2")
    source = (EXAMPLES / "dag_creation_tutorial.py").read_text()
    theirs = source.replace("import jobledger as htcondor", "import htcondor2 as htcondor").replace(
        "from jobledger import dags", "from htcondor2 import dags")
    assert theirs != source
    (tmp_path / "ours").mkdir()
    (tmp_path / "theirs").mkdir()
    (tmp_path / "theirs.py").write_text(theirs)
    run_example("dag_creation_tutorial.py", tmp_path / "ours")
    done = subprocess.run([sys.executable, str(tmp_path / "theirs.py")], cwd=tmp_path / "theirs",
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for name in ("dagfile.dag", "montage.sub", "tile.sub"):
        ours_text = (tmp_path / "ours" / "mandelbrot-dag" / name).read_text()
        assert ours_text == (tmp_path / "theirs" / "mandelbrot-dag" / name).read_text(), name


def test_dask_pool(tmp_path):
    pytest.importorskip("distributed")
    out = run_example("dask_pool.py", tmp_path)
    machines = [line for line in out.splitlines() if line.startswith("machine slot1@dask-")]
    assert len(machines) == 2
    assert "executing on dask-" in out and "returned 0" in out
    assert out.splitlines()[-1] == "words counted: 5"
    wait_until(lambda: not pool_processes(tmp_path / "dask-pool"), 15, what="the pool to stop")
