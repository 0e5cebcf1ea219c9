"""The environments: pure (StaticEnvironment) and real (daemons.client.submit)."""

from __future__ import annotations

import pytest

from jobledger.daemons.client.submit import OsSubmitEnvironment, build_cluster
from jobledger.eventcore.errors import SubmitError
from jobledger.eventcore.submit import StaticEnvironment, Submit


def test_static_environment_files_globs_and_randomness():
    env = StaticEnvironment(files={"a.txt": "1", "sub/b.txt": "22", "/abs/c.txt": "333"}, dirs={"sub"},
                            cwd="/abs")
    assert env.read_file("a.txt") == "1" and env.read_file("c.txt") == "333"
    assert env.glob("*.txt") == [("a.txt", False)] and env.glob("*") == [("a.txt", False), ("sub", True)]
    assert env.glob("sub/*.txt") == [("sub/b.txt", False)]
    assert env.file_size("sub/b.txt") == 2 and env.file_size("nope") is None
    with pytest.raises(FileNotFoundError):
        env.read_file("nope")
    draws = [env.randint(1, 3) for _ in range(50)]
    assert set(draws) == {1, 2, 3}
    again = StaticEnvironment(cwd="/abs")
    assert [again.randint(1, 3) for _ in range(50)] == draws


def test_os_environment_reads_relative_to_its_directory(tmp_path):
    (tmp_path / "items.txt").write_text("p 1\nq 2\n")
    (tmp_path / "d").mkdir()
    env = OsSubmitEnvironment(str(tmp_path))
    assert env.read_file("items.txt").startswith("p 1")
    assert env.glob("*") == [("d", True), ("items.txt", False)]
    assert env.is_dir("d") and not env.is_dir("items.txt") and env.file_size("items.txt") == 8
    sub = Submit.using(env, "executable = /bin/true\narguments = $(a)\nqueue a,b from items.txt\n")
    cluster_ad, procs, warnings = build_cluster(sub, 17, cwd=str(tmp_path), qdate=1700000000)
    assert cluster_ad["ClusterId"] == "17" and cluster_ad["Iwd"] == f'"{tmp_path}"'
    assert [p["Args"] for p in procs] == ['"p"', '"q"'] and warnings == []


def test_build_cluster_refuses_bad_statements(tmp_path):
    sub = Submit.using(OsSubmitEnvironment(str(tmp_path)), "executable = /bin/true\nqueue x from gone.txt\n")
    with pytest.raises(SubmitError, match="can't open file gone.txt"):
        build_cluster(sub, 1, cwd=str(tmp_path))
    with pytest.raises(ValueError):
        build_cluster(sub, 1, count=2, queue="3", cwd=str(tmp_path))


def test_v1_queue_with_itemdata_uses_the_transaction():
    class Txn:
        def submit(self, sub, count, itemdata, spool):
            self.args = (count, itemdata, spool)
            return 42

    txn = Txn()
    sub = Submit("executable = /bin/true\n")
    assert sub.queue(txn, 3) == 42 and txn.args == (3, None, False)
    with pytest.raises(NotImplementedError, match="transaction"):
        sub.queue_with_itemdata(object())
