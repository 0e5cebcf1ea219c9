"""Idempotent submits with real SIGKILLs: a client that lost its connection after the
schedd committed gets the committed cluster back, and never a second one."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading

from jobledger.daemons import ipc
from jobledger.daemons.storage.store import DB_NAME
import jobledger as htcondor
from tests.pool.conftest import wait_until
from tests.pool.test_crash import daemon_pid


def _clusters(local_dir) -> list[int]:
    """The cluster ads in the journal, in commit order (one per committed cluster)."""
    conn = sqlite3.connect(f"file:{local_dir / DB_NAME}?mode=ro", uri=True, timeout=30)
    try:
        return [c for (c,) in conn.execute(
            "SELECT cluster FROM journal WHERE type='cluster' ORDER BY position")]
    finally:
        conn.close()


CLIENT = """
import sys
from jobledger.daemons import ipc
address, cluster, token, iwd = sys.argv[1:]
ipc.call(address, "submit", cluster=int(cluster), token=token,
         cluster_ad={"Cmd": '"/bin/true"', "Iwd": repr(iwd).replace("'", '"')},
         proc_ads=[{"ProcId": "0"}, {"ProcId": "1"}, {"ProcId": "2"}])
print("acknowledged", flush=True)
"""


def test_a_token_sent_again_after_the_client_was_killed_gets_the_same_cluster(pool, tmp_path):
    address = pool.schedd._address
    cluster = ipc.call(address, "new_cluster")
    before = len(_clusters(pool.local_dir))
    client = subprocess.Popen([sys.executable, "-c", CLIENT, address, str(cluster), "tok-1",
                               str(tmp_path)], stdout=subprocess.PIPE, cwd=os.getcwd())
    wait_until(lambda: cluster in _clusters(pool.local_dir), 30, 0.001, what="the commit")
    client.kill()                                 # SIGKILL, whether or not it heard the reply
    client.wait()
    client.stdout.close()
    args = dict(cluster=cluster, cluster_ad={"Cmd": '"/bin/true"'},
                proc_ads=[{"ProcId": "0"}, {"ProcId": "1"}, {"ProcId": "2"}])
    reply = ipc.call(address, "submit", token="tok-1", **args)   # another process, same token
    assert (reply["cluster"], reply["num_procs"]) == (cluster, 3)
    again = ipc.call(address, "submit", token="tok-1", **args)
    assert again["cluster"] == cluster
    assert _clusters(pool.local_dir)[before:] == [cluster]        # committed once
    history = pool.schedd.history(f"ClusterId == {cluster}", ["ProcId"])
    queue = pool.schedd.query(f"ClusterId == {cluster}", ["ProcId"])
    assert len(history) + len(queue) == 3


def test_submits_across_schedd_kills_right_after_commit_are_never_doubled(fresh_pool, tmp_path):
    schedd = fresh_pool.schedd
    job = htcondor.Submit({"executable": "/bin/true", "initialdir": str(tmp_path)})
    for trial in range(4):
        committed = len(_clusters(fresh_pool.local_dir))
        result, errors = [], []

        def submit():
            try:
                result.append(schedd.submit(job, 2))
            except Exception as exc:  # noqa: BLE001 - asserted below
                errors.append(exc)

        thread = threading.Thread(target=submit, name="submit")
        victim = daemon_pid(fresh_pool, "schedd")
        thread.start()
        wait_until(lambda: len(_clusters(fresh_pool.local_dir)) > committed, 60, 0.0005,
                   what="the submit's commit")
        os.kill(victim, signal.SIGKILL)              # right after the commit
        thread.join(120)
        assert not thread.is_alive() and not errors, errors
        new = _clusters(fresh_pool.local_dir)[committed:]
        assert new == [result[0].cluster()], (trial, new)    # the client got it, once
        wait_until(lambda: daemon_pid(fresh_pool, "schedd") != victim, 30, what="a new schedd")
    ids = _clusters(fresh_pool.local_dir)
    assert len(ids) == len(set(ids)) == 4
