"""The wheel, installed as a user installs it, works with no source tree in sight.

The project is built into a wheel (``pip wheel --no-deps``) from a copy of the
tree, installed with its dependencies into a new virtual environment outside
the checkout, and used from an empty directory with a home of its own and no
PYTHONPATH: ``jobledger pool start``, ``condor_submit``, ``condor_wait``,
``condor_q``, ``condor_history``, ``condor_config_val``, ``jobledger audit``,
``jobledger pool stop`` and ``htcondor.param[...]`` through ``import jobledger``.
Any file the code reads at run time that the wheel leaves out (a JSON table,
a schema) fails here.

pip needs PyPI or its cache for the build backend and the dependencies, as
``make venv`` does; every step is bounded in time.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.pool.conftest import pool_processes, wait_until

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("jobledger", "eventcore", "daemons", "tracking", "schemas")
NOT_BUILT = shutil.ignore_patterns(".venv", ".git", "build", "dist", "*.egg-info", "__pycache__",
                                   ".pytest_cache", ".hypothesis", "tests", "bench", "tmp")
STEP = 300          # seconds any one pip or command step may take

pytestmark = [pytest.mark.wheel, pytest.mark.timeout(1200)]


def _run(argv, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=STEP, **kwargs)
    assert done.returncode == 0, f"{argv} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel built from a copy of the tree (the checkout is left as it is)."""
    base = tmp_path_factory.mktemp("wheel")
    source = base / "source"
    shutil.copytree(ROOT, source, ignore=NOT_BUILT)
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(base / "dist"),
          str(source)], cwd=base)
    built = sorted((base / "dist").glob("jobledger-*.whl"))
    assert len(built) == 1, built
    return built[0]


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A new virtual environment outside the checkout with the wheel and its dependencies."""
    where = tmp_path_factory.mktemp("venv") / "env"
    _run([sys.executable, "-m", "venv", "--without-pip", str(where)])
    python = where / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
          "--disable-pip-version-check", str(wheel)])
    return where


def user_env(venv: Path, home: Path) -> dict:
    """A user's environment: the venv's scripts on PATH, a home of its own, nothing of ours."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "CONDOR_CONFIG", "VIRTUAL_ENV", "PYTHONHOME")
           and not k.startswith(("_CONDOR_", "JOBLEDGER_", "PYTEST", "COV_"))}
    env["PATH"] = f"{venv / 'bin'}:/usr/bin:/bin"
    env["HOME"] = str(home)
    env["VIRTUAL_ENV"] = str(venv)
    return env


def test_every_file_of_the_packages_is_in_the_wheel(wheel):
    """Each file under the package folders (source, JSON tables, schemas, static pages) is in the
    wheel where the code looks for it: eventcore/x installs as jobledger/eventcore/x."""
    with zipfile.ZipFile(wheel) as whl:
        names = set(whl.namelist())
    tracked = set(subprocess.run(["git", "ls-files", *PACKAGES], cwd=ROOT, capture_output=True,
                                 text=True).stdout.split()) if (ROOT / ".git").exists() else None
    wanted = [p.relative_to(ROOT).as_posix() for package in PACKAGES for p in (ROOT / package).rglob("*")
              if p.is_file() and p.suffix != ".pyc" and "__pycache__" not in p.parts]
    if tracked:                         # a checkout: what is committed, not what a run left behind
        wanted = [p for p in wanted if p in tracked]
    assert any(p.endswith(".json") for p in wanted), "no data files found: the layout changed"
    missing = [p for p in wanted if (p if p.startswith("jobledger/") else f"jobledger/{p}") not in names]
    assert not missing, f"the wheel leaves out: {missing}"
    assert not [n for n in names if n.split("/")[0] in ("tests", "bench", *PACKAGES[1:])]


def test_installed_wheel_runs_a_pool(venv, tmp_path):
    home, cwd = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    cwd.mkdir()
    env = user_env(venv, home)
    bin_ = venv / "bin"

    def run(*argv, **extra):
        return _run([str(bin_ / argv[0]), *argv[1:]], cwd=cwd, env={**env, **extra})

    where = run("python", "-c", "import jobledger as htcondor, sys\n"
                "print(htcondor.__file__)\nprint(htcondor.param['NEGOTIATOR_INTERVAL'])\n"
                "print(any(p.startswith(sys.argv[1]) for p in sys.path))", str(ROOT)).stdout.split("\n")
    assert where[0].startswith(str(venv)) and where[1] == "60" and where[2] == "False", where

    local_dir = cwd / "pool"
    started = run("jobledger", "pool", "start", "--local-dir", "pool")
    try:
        exports = [line.strip() for line in started.stdout.splitlines()
                   if line.strip().startswith("export CONDOR_CONFIG=")]
        assert exports, started.stdout
        config = exports[0].split("=", 1)[1]
        assert Path(config) == local_dir / "condor_config" and Path(config).is_file()
        pool_env = {"CONDOR_CONFIG": config}
        (cwd / "job.sub").write_text("executable = /bin/echo\narguments = hello wheel\n"
                                     "output = job.out\nerror = job.err\nlog = job.log\nqueue 2\n")
        submitted = run("condor_submit", "job.sub", **pool_env).stdout
        assert "2 job(s) submitted to cluster 1." in submitted, submitted
        run("condor_wait", "-wait", "240", "job.log", **pool_env)
        assert (cwd / "job.out").read_text() == "hello wheel\n"
        queue = run("condor_q", "-af", "ClusterId", **pool_env).stdout
        assert queue.strip() == "", queue
        history = run("condor_history", "-af", "ClusterId", "ProcId", "JobStatus", **pool_env).stdout
        assert sorted(history.split("\n")[:-1]) == ["1 0 4", "1 1 4"], history
        journal = run("condor_config_val", "JOURNAL", **pool_env).stdout.strip()
        assert Path(journal).is_file(), journal
        audit = run("jobledger", "audit", **pool_env).stdout
        assert audit.splitlines()[-1].startswith("OK: 0 findings"), audit
    finally:
        stopped = subprocess.run([str(bin_ / "jobledger"), "pool", "stop", "--local-dir", "pool"],
                                 cwd=cwd, env=env, capture_output=True, text=True, timeout=STEP)
    assert stopped.returncode == 0, stopped.stderr
    wait_until(lambda: not pool_processes(local_dir), 30, what="the installed pool's processes to exit")
    # read-only commands go on working on the stopped pool, found through CONDOR_CONFIG
    offline = run("condor_history", "-af", "ClusterId", **pool_env).stdout
    assert offline.split() == ["1", "1"], offline
    assert not [p for p in cwd.iterdir() if p.name not in ("pool", "job.sub", "job.out", "job.err",
                                                            "job.log")]


REMOTE_CLIENT = """
import json, os, sys, time
from pathlib import Path
import jobledger as htcondor
address = sys.argv[1]
work = Path("work")
work.mkdir()
(work / "job.sh").write_text("#!/bin/sh\\nsort words.txt\\n")
os.chmod(work / "job.sh", 0o755)
(work / "words.txt").write_text("pear\\napple\\nfig\\n")
schedd = htcondor.Schedd(htcondor.Collector(address).locate(htcondor.DaemonType.Schedd))
sub = htcondor.Submit({"executable": "job.sh", "initialdir": str(work.absolute()),
                       "transfer_input_files": "words.txt", "output": "sorted.txt"})
result = schedd.submit(sub, spool=True)
schedd.spool(result)
cluster = result.cluster()
deadline, status = time.monotonic() + 180, None
while time.monotonic() < deadline and status not in ([4], [5]):
    status = [ad["JobStatus"] for ad in schedd.query(f"ClusterId == {cluster}", ["JobStatus"])]
    time.sleep(0.1)
owner = schedd.query(f"ClusterId == {cluster}", ["Owner"])[0]["Owner"]
schedd.retrieve(f"ClusterId == {cluster}")
sleeper = schedd.submit(htcondor.Submit({"executable": "/bin/sleep", "arguments": "600"})).cluster()
removed = schedd.act(htcondor.JobAction.Remove, f"ClusterId == {sleeper}")["TotalSuccess"]
schedd.act(htcondor.JobAction.Remove, f"ClusterId == {cluster}")
print("RESULT " + json.dumps({"status": status, "owner": owner, "removed": removed,
                              "sorted": (work / "sorted.txt").read_text(), "module": htcondor.__file__}))
"""


def test_a_client_in_a_fresh_venv_with_only_a_token_uses_a_remote_pool(venv, tmp_path):
    """The must-show of issue 25: a pool on 127.0.0.1 that requires a token and TLS, and a
    client in the wheel's own venv holding nothing but a token file (no configuration, no
    access to the pool's LOCAL_DIR, its own cwd and iwd) that locates the schedd, submits
    with spool, queries, removes, and retrieves the output."""
    from jobledger.daemons.client.personal import PersonalPool
    from tests.pool.conftest import stop_and_check
    from tests.security.test_network_pool import free_port, make_token
    port = free_port()
    pool = PersonalPool(local_dir=tmp_path / "pool", config={
        "COLLECTOR_HOST": f"127.0.0.1:{port}", "TRUST_DOMAIN": "test.pool"})
    pool.start()
    try:
        home = tmp_path / "home"
        (home / ".condor" / "tokens.d").mkdir(parents=True)
        (home / ".condor" / "tokens.d" / "zoe").write_text(make_token(pool, "zoe@test.pool") + "\n")
        done = subprocess.run([str(venv / "bin" / "python"), "-c", REMOTE_CLIENT, f"127.0.0.1:{port}"],
                              cwd=home, env=user_env(venv, home), capture_output=True, text=True,
                              timeout=STEP)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
        seen = [__import__("json").loads(line[7:]) for line in done.stdout.splitlines()
                if line.startswith("RESULT ")][0]
    finally:
        stop_and_check(pool)
    assert seen["module"].startswith(str(venv))
    assert seen["status"] == [4] and seen["owner"] == "zoe" and seen["removed"] == 1
    assert seen["sorted"] == "apple\nfig\npear\n"
