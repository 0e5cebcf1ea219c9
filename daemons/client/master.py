"""What a daemon the master started tells its master: ``set_ready_state`` (DC_SET_READY,
the state ``condor_who`` shows as ``<NAME>_State``) and ``send_alive`` (DC_CHILDALIVE, a
promise to say so again within a timeout, after which the master kills it as hung).

The master is found as HTCondor's daemons find it: ``CONDOR_INHERIT`` holds the parent's
pid and address (the master sets it for every daemon it starts), or ``send_alive`` is
given the master's location ad.
"""

from __future__ import annotations

import os

from jobledger.daemons import ipc
from jobledger.daemons.config_files import param
from jobledger.eventcore.classad import ClassAd
from jobledger.eventcore.errors import HTCondorException

TIMEOUT = 30


def _inherited_master(missing: type[Exception]) -> str:
    inherit = os.environ.get("CONDOR_INHERIT")
    if inherit is None:
        raise missing("CONDOR_INHERIT not in environment." if missing is HTCondorException else
                      "No location specified and CONDOR_INHERIT not in environment.")
    parts = inherit.split(" ")
    if len(parts) < 2 or not parts[1]:
        raise missing("CONDOR_INHERIT environment variable malformed." if missing is HTCondorException else
                      "No location specified and CONDOR_INHERIT is malformed.")
    return parts[1]


def set_ready_state(state: str = "Ready") -> None:
    """Tell the master that started this process that it is in ``state`` (default
    ``"Ready"``; an empty state is ``"Ready"`` too, as htcondor2 has it)."""
    if not isinstance(state, str):
        raise TypeError("state must be a string")
    address = _inherited_master(HTCondorException)
    ipc.call(address, "set_ready", timeout=TIMEOUT, pid=os.getpid(), state=state or "Ready")


def send_alive(ad: ClassAd | None = None, pid: int | None = None, timeout: int | None = None) -> None:
    """Tell the master (``ad``'s ``MyAddress``, or the parent CONDOR_INHERIT names) that
    the daemon ``pid`` (default: this process) is alive and will say so again within
    ``timeout`` seconds (default NOT_RESPONDING_TIMEOUT)."""
    if pid is None:
        pid = os.getpid()
    if isinstance(pid, bool) or not isinstance(pid, int):
        raise TypeError("pid must be integer")
    if timeout is None:
        timeout = int(param.get("NOT_RESPONDING_TIMEOUT", "3600"))
    if isinstance(timeout, bool) or not isinstance(timeout, int):
        raise TypeError("timeout must be integer")
    if ad is not None:
        if not isinstance(ad, ClassAd):
            raise TypeError("ad must be ClassAd")
        address = ad.get("MyAddress")
        if not isinstance(address, str):
            raise ValueError("Address not available in location ClassAd.")
    else:
        address = _inherited_master(ValueError)
    ipc.call(address, "child_alive", timeout=TIMEOUT, pid=pid, timeout_s=timeout)
