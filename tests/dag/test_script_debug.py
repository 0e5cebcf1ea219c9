"""SCRIPT DEBUG files in a real pool: each script's output lands in one block after
HTCondor's banner line, written when the script ends, so scripts sharing a file never
interleave; STDOUT, STDERR or ALL choose the streams kept."""

from __future__ import annotations

import os
import re
import stat

import jobledger as htcondor
from tests.pool.conftest import wait_until

SCRIPT = "#!/bin/sh\necho \"out $1\"\necho \"err $1\" >&2\nexit $2\n"


def test_script_debug_blocks(pool, tmp_path):
    (tmp_path / "s.sh").write_text(SCRIPT)
    (tmp_path / "s.sh").chmod(stat.S_IRWXU)
    (tmp_path / "a.sub").write_text("executable = /bin/true\nqueue\n")
    (tmp_path / "d.dag").write_text(
        "JOB A a.sub\nJOB B a.sub\nJOB C a.sub\n"
        "SCRIPT DEBUG a.debug STDOUT PRE A s.sh A 0\n"
        "SCRIPT DEBUG b.debug STDERR POST B s.sh B 3\n"
        "SCRIPT DEBUG shared.debug ALL PRE C s.sh C1 0\n"
        "SCRIPT DEBUG shared.debug ALL POST C s.sh C2 0\n"
        "RETRY B 1\n")
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        cluster = pool.schedd.submit(htcondor.Submit.from_dag("d.dag")).cluster()
    finally:
        os.chdir(old)
    wait_until(lambda: pool.schedd.history(f"ClusterId == {cluster}", ["ExitCode"]), 120,
               what="the DAGMan job to finish")
    banner = r"\*\*\* Node={} Type={} ExitCode={} Completion=\d+ Cmd='s\.sh {} {}'\n"
    a = (tmp_path / "a.debug").read_text()
    assert re.fullmatch(banner.format("A", "PRE", 0, "A", 0) + "out A\n", a), a
    b = (tmp_path / "b.debug").read_text()       # the POST script failed, ran again with the retry
    assert re.fullmatch((banner.format("B", "POST", 3, "B", 3) + "err B\n") * 2, b), b
    shared = (tmp_path / "shared.debug").read_text()
    assert re.fullmatch(banner.format("C", "PRE", 0, "C1", 0) + "out C1\nerr C1\n"
                        + banner.format("C", "POST", 0, "C2", 0) + "out C2\nerr C2\n", shared), shared
