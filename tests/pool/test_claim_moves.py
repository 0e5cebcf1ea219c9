"""A plain starter's next job is handed to it without asking the startd: the schedd
moves the claim and tells the startd after (daemons.schedd.moves), in order; any other
call to that startd comes after the moves before it; a draining startd's starters
offer no next job; a schedd that starts tells the startd the moves it missed."""

from __future__ import annotations

import os

import pytest

import jobledger as htcondor
from jobledger.daemons import ipc
from jobledger.daemons.schedd.moves import StartdCalls
from jobledger.daemons.schedd.runs import Runs
from jobledger.daemons.starter import NO_REUSE, Starter
from jobledger.eventcore.errors import HTCondorException
from tests.pool.conftest import running_pool, wait_until
from tests.pool.startd_unit import slot, startd  # noqa: F401  (startd: a fixture)

JOB = {"ClusterId": 1, "ProcId": 0, "Owner": "alice", "Cmd": "/bin/true", "Iwd": "/tmp"}


class Log:
    def __init__(self):
        self.lines = []

    def info(self, text, *args):
        self.lines.append(text % args)


def test_a_starter_offers_no_next_job_while_its_startd_drains(tmp_path):
    starter = Starter(dict(JOB), "claim-1", str(tmp_path), "unused", None, 1.0)
    offers = []
    starter._report = lambda outcome, more=False: (offers.append(more), (True, {"result": 1}))[1]
    starter._finish({"kind": "exit", "code": 0})
    (tmp_path / NO_REUSE).touch()
    starter._finish({"kind": "exit", "code": 0})
    (tmp_path / NO_REUSE).unlink()
    starter._finish({"kind": "exit", "code": 0})
    assert offers == [True, False, True]
    assert starter._offer() == {"more": True, "direct": True}


def test_calls_to_a_startd_come_after_the_moves_queued_for_it():
    sent = []
    calls = StartdCalls(lambda cmd, address, **args: sent.append((cmd, address, args)) or "ok",
                        lambda: "local", Log())
    calls.moved(None, {"from": "a", "claim": "b"})
    calls.moved("far", {"from": "x", "claim": "y"})
    calls.moved("local", {"from": "b", "claim": "c"})
    assert calls("signal", claim="c", what="kill") == "ok"    # (after every startd's moves)
    assert sent == [("claims_moved", "local", {"moves": [{"from": "a", "claim": "b"}, {"from": "b", "claim": "c"}]}),
                    ("claims_moved", "far", {"moves": [{"from": "x", "claim": "y"}]}),
                    ("signal", "local", {"claim": "c", "what": "kill"})]
    sent.clear()
    calls.moved("far", {"from": "y", "claim": "z"})
    calls.send_queued()                 # the sender's round: each startd its own
    assert sent == [("claims_moved", "far", {"moves": [{"from": "y", "claim": "z"}]})]


def test_a_move_a_startd_cannot_take_is_said_and_dropped():
    def refuse(cmd, address, **args):
        raise HTCondorException("no startd there")
    log = Log()
    calls = StartdCalls(refuse, lambda: "local", log)
    calls.moved(None, {"from": "a", "claim": "b"})
    calls.flush("local")
    assert log.lines == ["could not tell local of 1 claim moves: no startd there"]
    calls.flush("local")                # (nothing left to send)
    assert len(log.lines) == 1


def test_the_startd_takes_moves_in_order_and_skips_one_whose_claim_is_gone(startd):
    startd.claims["a"] = slot(os.getpid(), scratch="/x/dir_1")
    job = {"Owner": "alice", "ClusterId": 1, "ProcId": 1}
    moves = [{"from": "a", "claim": "b", "job": job, "scratch": "/x/dir_1_b"},
             {"from": "b", "claim": "c", "job": {**job, "ProcId": 2}, "scratch": "/x/dir_1_c"},
             {"from": "gone", "claim": "d", "job": job, "scratch": "/x/dir_9"}]
    assert startd._claims_moved(None, moves) == 2
    assert set(startd.claims) == {"c"}
    moved = startd.claims["c"]
    assert (moved["job"], moved["scratch"], moved["pid"], moved["name"]) == ("1.2", "/x/dir_1_c", os.getpid(),
                                                                            "slot1_1@here")
    with pytest.raises(ValueError, match="claims_moved"):
        startd._claims_moved(None, [{"from": "c", "claim": "e"}])


def test_a_drain_marks_the_execute_directory_until_it_is_cancelled(startd):
    marker = startd.execute_dir / NO_REUSE
    startd.poke_negotiator = lambda: None
    assert not marker.exists()
    startd._drain_jobs(None, how=0)     # (graceful)
    assert marker.exists()
    startd._cancel_drain(None)
    assert not marker.exists()


def test_a_starting_schedd_finds_the_moves_it_did_not_tell():
    running = [{"ClaimId": '"c"', "StarterPid": "42", "StarterStart": "7.5", "ScratchDir": '"/x/dir_42_c"',
                "Owner": '"alice"', "ClusterId": "3", "ProcId": "1"}]
    claims = {"a": {"pid": 42, "start": 7.5}, "z": {"pid": 43, "start": 1}}
    moves = Runs._untold_moves(claims, running, {"c"})
    assert moves == [{"from": "a", "claim": "c", "job": {"Owner": "alice", "ClusterId": 3, "ProcId": 1},
                      "scratch": "/x/dir_42_c"}]
    assert Runs._untold_moves({"c": {"pid": 42, "start": 7.5}}, running, {"c"}) == []


@pytest.fixture(scope="module")
def one_slot(tmp_path_factory):
    yield from running_pool(tmp_path_factory, NUM_CPUS="1", PERIODIC_EXPR_INTERVAL="1")


def test_the_startd_learns_the_next_job_and_a_removal_reaches_it(one_slot, tmp_path):
    schedd = htcondor.Schedd()
    gate, script = tmp_path / "go", tmp_path / "wait.sh"
    script.write_text(f"#!/bin/sh\nwhile [ ! -e {gate} ]; do sleep 0.05; done\n")
    script.chmod(0o755)
    first = schedd.submit(htcondor.Submit({"executable": str(script), "initialdir": str(tmp_path)})).cluster()
    ad = wait_until(lambda: next(iter(schedd.query(f"ClusterId == {first} && JobStatus == 2",
                                                    ["StarterPid"])), None), 60, what="the first job running")
    second = schedd.submit(htcondor.Submit({"executable": "/bin/sleep", "arguments": "600",
                                            "initialdir": str(tmp_path)})).cluster()
    gate.touch()
    nxt = wait_until(lambda: next(iter(schedd.query(f"ClusterId == {second} && JobStatus == 2",
                                                     ["StarterPid", "ClaimId"])), None), 60,
                     what="the second job running")
    assert nxt["StarterPid"] == ad["StarterPid"]            # the same starter ran it
    startd = htcondor.Collector().locate(htcondor.DaemonType.Startd)["MyAddress"]
    told = wait_until(lambda: ipc.call(startd, "claims").get(nxt["ClaimId"]), 30, what="the startd told of the move")
    assert told["scratch"].endswith(f"_{nxt['ClaimId'][:12]}")      # named by the schedd: not asked
    schedd.act(htcondor.JobAction.Remove, f"ClusterId == {second}")
    wait_until(lambda: not schedd.query(f"ClusterId == {second}", ["ClusterId"]), 60, what="the job removed")
    wait_until(lambda: not ipc.call(startd, "claims"), 60, what="its starter gone")
