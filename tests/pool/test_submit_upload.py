"""A big submission goes to the schedd in chunks, appended in one transaction:
a client killed (SIGKILL) midway commits nothing, a retried token commits once."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from jobledger.daemons import ipc
from jobledger.daemons.client import api as clients
import jobledger as htcondor
from jobledger.eventcore.errors import SubmitError
from tests.pool.test_idempotent_submit import _clusters

PROCS, CHUNK = 12_000, 1000

CLIENT = """
import sys
from jobledger.daemons import ipc
address, cluster, token, procs, chunk = sys.argv[1:]
procs, chunk = int(procs), int(chunk)

def chunks():
    for first in range(0, procs, chunk):
        if first + chunk >= procs:      # every chunk but the last has been sent
            print("sent", flush=True)
            sys.stdin.read()            # wait here until killed
        yield [{"ProcId": str(p), "Args": '"%d"' % p} for p in range(first, first + chunk)]

ipc.call_upload(address, "submit", chunks(), cluster=int(cluster), token=token, num_procs=procs,
                cluster_ad={"Cmd": '"/bin/true"', "JobStatus": "5"})
print("acknowledged", flush=True)
"""


def _chunks(procs: int, chunk: int):
    for first in range(0, procs, chunk):
        yield [{"ProcId": str(p), "Args": f'"{p}"'} for p in range(first, min(first + chunk, procs))]


def test_a_client_killed_midway_through_its_upload_commits_nothing(pool):
    address = pool.schedd._address
    cluster = ipc.call(address, "new_cluster")
    before = _clusters(pool.local_dir)
    client = subprocess.Popen([sys.executable, "-c", CLIENT, address, str(cluster), "up-1", str(PROCS),
                               str(CHUNK)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=os.getcwd())
    # 11 of 12 chunks (~0.7 MB, more than the socket buffers hold) are out: the
    # schedd has appended most of them inside its open transaction
    assert client.stdout.readline() == b"sent\n"
    client.kill()
    client.wait()
    client.stdin.close()
    client.stdout.close()
    # the next submit needs the journal's write lock: the stream's transaction is over
    small = pool.schedd.submit(htcondor.Submit({"executable": "/bin/true", "hold": "true"}), count=1)
    assert _clusters(pool.local_dir) == before + [small.cluster()]
    assert pool.schedd.query(f"ClusterId == {cluster}", ["ProcId"]) == []
    # the same token sent again from another client commits the cluster, once
    args = dict(cluster=cluster, token="up-1", num_procs=PROCS,
                cluster_ad={"Cmd": '"/bin/true"', "JobStatus": "5"})
    reply = ipc.call_upload(address, "submit", _chunks(PROCS, CHUNK), **args)
    assert (reply["cluster"], reply["num_procs"]) == (cluster, PROCS)
    asked = []

    def never():
        asked.append(True)
        yield from _chunks(PROCS, CHUNK)
    assert ipc.call_upload(address, "submit", never(), **args)["cluster"] == cluster
    assert asked == []                   # answered from the journal, no chunk asked for
    assert _clusters(pool.local_dir) == before + [small.cluster(), cluster]
    ads = pool.schedd.query(f"ClusterId == {cluster}", ["ProcId", "Args", "TotalSubmitProcs"])
    assert sorted(int(ad["ProcId"]) for ad in ads) == list(range(PROCS))
    assert {ad["TotalSubmitProcs"] for ad in ads} == {PROCS}
    pool.schedd.act(htcondor.JobAction.Remove, f"ClusterId == {cluster} || ClusterId == {small.cluster()}")


def test_an_upload_that_breaks_its_announcement_commits_nothing(pool):
    address = pool.schedd._address
    for sent, announced in ((3, 5), (5, 3)):
        cluster = ipc.call(address, "new_cluster")
        with pytest.raises(htcondor.HTCondorException, match="announced"):
            ipc.call_upload(address, "submit", _chunks(sent, 2), cluster=cluster, num_procs=announced,
                            cluster_ad={"Cmd": '"/bin/true"', "JobStatus": "5"})
        assert pool.schedd.query(f"ClusterId == {cluster}", ["ProcId"]) == []


def test_schedd_submit_sends_big_submissions_in_chunks(pool, tmp_path, monkeypatch):
    monkeypatch.setattr(clients, "UPLOAD_CHUNK", 100)
    sizes = []
    real = ipc.call_upload

    def counting(address, cmd, chunks, **args):
        def counted():
            for chunk in chunks:
                sizes.append(len(chunk))
                yield chunk
        return real(address, cmd, counted(), **args)
    monkeypatch.setattr(ipc, "call_upload", counting)
    items = tmp_path / "items.txt"
    items.write_text("".join(f"n{i} {i % 7}\n" for i in range(1050)))
    sub = htcondor.Submit(f"executable = /bin/true\nhold = true\narguments = $(name) $(size)\n"
                          f"queue name,size from {items}\n")
    result = pool.schedd.submit(sub)
    assert sizes == [100] * 10 + [50] and result.num_procs() == 1050
    ads = pool.schedd.query(f"ClusterId == {result.cluster()}", ["ProcId", "Args"])
    assert {(int(ad["ProcId"]), ad["Args"]) for ad in ads} == {(i, f"n{i} {i % 7}") for i in range(1050)}
    # a bad value met midway: the client stops, the schedd keeps nothing of it
    items.write_text("".join(f"{i}\n" for i in range(500)) + "lots\n" + "".join(f"{i}\n" for i in range(500)))
    bad = htcondor.Submit(f"executable = /bin/true\nhold = true\narguments = $INT(mem)\n"
                          f"queue mem from {items}\n")
    with pytest.raises(SubmitError, match="lots does not evaluate to an integer"):
        pool.schedd.submit(bad)
    assert pool.schedd.query("ClusterId > %d" % result.cluster(), ["ProcId"]) == []
    pool.schedd.act(htcondor.JobAction.Remove, f"ClusterId == {result.cluster()}")


def test_an_uploaded_scheduler_universe_cluster_is_noted_by_its_procs(pool):
    address = pool.schedd._address
    cluster = ipc.call(address, "new_cluster")
    reply = ipc.call_upload(address, "submit", _chunks(3, 2), cluster=cluster, num_procs=3,
                            cluster_ad={"Cmd": '"/bin/true"', "JobStatus": "5", "JobUniverse": "7"})
    assert reply["num_procs"] == 3
    ads = pool.schedd.query(f"ClusterId == {cluster}", ["ProcId", "JobUniverse"])
    assert sorted((int(ad["ProcId"]), ad["JobUniverse"]) for ad in ads) == [(0, 7), (1, 7), (2, 7)]
    pool.schedd.act(htcondor.JobAction.Remove, f"ClusterId == {cluster}")
