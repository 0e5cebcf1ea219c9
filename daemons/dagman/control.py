"""Talking to a running DAGMan: halt, resume, new throttles (htcondor2's ``DAGMan`` class).

The DAGMan process listens on a Unix socket in its scratch directory and
puts the address in its own job ad (``DAGManContact``); ``DAGMan(dag_id)``
finds it there through the schedd.  Only the DAGMan's own user may connect
(the socket is 0600 and the server checks the peer's uid).  Commands are
htcondor2's: DagCommand 1 halt (HaltReason, IsPause), 2 resume, 3 set
throttles (DAGMan_MaxJobs, DAGMan_MaxIdle, DAGMan_MaxPreScripts,
DAGMan_MaxPostScripts, DAGMan_MaxHoldScripts).
"""

from __future__ import annotations

import enum
import os

import attrs

from jobledger.daemons import ipc
from jobledger.eventcore.classad import ClassAd
from jobledger.eventcore.errors import HTCondorException

THROTTLE_ATTRS = {"DAGMan_MaxJobs": "max_jobs", "DAGMan_MaxIdle": "max_idle",
                  "DAGMan_MaxPreScripts": "max_pre", "DAGMan_MaxPostScripts": "max_post",
                  "DAGMan_MaxHoldScripts": "max_hold"}
ARGS = {"max_nodes": "DAGMan_MaxJobs", "max_idle": "DAGMan_MaxIdle", "max_pre": "DAGMan_MaxPreScripts",
        "max_post": "DAGMan_MaxPostScripts", "max_hold": "DAGMan_MaxHoldScripts",
        "max_submits": "DAGMan_MaxSubmitsPerInterval"}


class Command(enum.IntEnum):
    HALT = 1
    RESUME = 2
    SET_THROTTLES = 3


class ControlServer:
    """The DAGMan process's side: applies commands to its ``DagRun`` (from the server thread:
    each command is one attribute assignment the main loop reads on its next round)."""

    def __init__(self, run, log, path: str):
        self.run = run
        self.log = log
        self.server = ipc.Server(path, {"dagman_command": self.command})

    def start(self) -> str:
        self.server.start(name="dagman-control")
        return self.server.address

    def close(self) -> None:
        self.server.close()

    def command(self, peer, request: dict) -> dict:
        what = request.get("DagCommand")
        if what == Command.HALT:
            self.run.halt(pause=bool(request.get("IsPause", False)))
            self.log(f"DAG halted: {request.get('HaltReason', 'by request')}")
            return {"Result": True}
        if what == Command.RESUME:
            self.run.resume()
            self.log("DAG resumed")
            return {"Result": True}
        if what == Command.SET_THROTTLES:
            changes = {}
            for attr, field in THROTTLE_ATTRS.items():
                value = request.get(attr)
                if value is not None:
                    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                        return {"Result": False, "ErrorString": f"{attr} must be a non-negative integer"}
                    changes[field] = value
            self.run.throttles = attrs.evolve(self.run.throttles, **changes)
            self.log(f"throttles now {self.run.throttles}")
            current = attrs.asdict(self.run.throttles)
            out = {"Result": True, "DAGMan_MaxSubmitsPerInterval": 0}
            out.update({attr: current[field] for attr, field in THROTTLE_ATTRS.items()})
            return out
        return {"Result": False, "ErrorString": f"unknown DagCommand {what!r}"}


class DAGMan:
    """``htcondor2.DAGMan``: commands to the running DAGMan job ``dag_id`` of the local schedd."""

    def __init__(self, dag_id: int):
        if isinstance(dag_id, bool) or not isinstance(dag_id, int):
            raise TypeError("dag_id must be an integer")
        self._dag_id = dag_id

    @property
    def dag_id(self) -> int:
        return self._dag_id

    def halt(self, reason: str | None = None, pause: bool | None = None) -> tuple[bool, str]:
        request = {"DagCommand": int(Command.HALT)}
        if pause is not None:
            request["IsPause"] = bool(pause)
        if reason is not None:
            request["HaltReason"] = str(reason)
        ok, result = self._send(request)
        if not ok:
            return False, result
        return True, f"{'Paused' if pause else 'Halted'} DAG {self.dag_id}"

    def resume(self) -> tuple[bool, str]:
        ok, result = self._send({"DagCommand": int(Command.RESUME)})
        return (True, f"Resumed DAG {self.dag_id}") if ok else (False, result)

    def set_throttles(self, **kwargs):
        request = {"DagCommand": int(Command.SET_THROTTLES)}
        for key, attr in ARGS.items():
            if kwargs.get(key) is not None:
                request[attr] = kwargs[key]
        if len(request) == 1:
            return "No valid throttle specified"
        ok, result = self._send(request)
        if not ok:
            return result
        return ClassAd({attr: result.get(attr) for attr in ARGS.values()})

    def _send(self, request: dict) -> tuple[bool, object]:
        try:
            address = self._locate()
            result = ipc.call(address, "dagman_command", timeout=30, request=request)
        except HTCondorException as exc:
            return False, f"Failed to contact DAGMan {self.dag_id}: {exc}"
        if not result.get("Result", False):
            return False, result.get("ErrorString", "Unknown")
        return True, result

    def _locate(self) -> str:
        from jobledger.daemons.client.api import Schedd
        ads = Schedd().query(f"ClusterId == {self.dag_id}", ["DAGManContact"])
        if not ads or not isinstance(ads[0].get("DAGManContact"), str):
            raise HTCondorException(f"no running DAGMan job {self.dag_id} (no DAGManContact)")
        return ads[0]["DAGManContact"]


def control_path() -> str:
    return os.path.join(os.environ.get("_CONDOR_SCRATCH_DIR", "."), "dagman.sock")
