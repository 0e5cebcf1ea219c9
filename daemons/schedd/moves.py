"""The schedd's calls to startds, and the claim moves it tells them after the fact.

A plain starter that offers to run its claim's next job (``direct``) gets it
from the schedd alone: the schedd knows the slot, the starter (pid and start
time, from the finished job's ad) and names the next scratch directory, so it
moves the claim itself and records the next run without asking the startd.
The startd learns the move afterwards: ``moved`` queues it, and a background
thread sends the queued moves to each startd in the order they were made, many
in one ``claims_moved`` call.

Every other call to a startd goes through ``StartdCalls`` too and first sends
the moves queued (for every startd: one address may be spelt two ways): a
signal, a ``claims`` question or an ``activate`` reusing a moved claim always
finds the startd knowing every claim moved before it.  A move the startd cannot take (it is down) is
dropped with a line in the log: its starter keeps running the job, and a
schedd that starts tells the startd again the moves it finds missing
(``Runs.kill_unknown_claims``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from jobledger.eventcore.errors import HTCondorException

SLOT_ATTRS = ("Owner", "ClusterId", "ProcId", "AccountingGroup", "User", "MaxJobRetirementTime")   # what a startd keeps of a job it runs
GATHER = 0.02       # seconds the sender waits for more moves before one call (fewer round trips)
IDLE_WAIT = 5.0     # seconds the sender sleeps with nothing queued (woken by ``moved``)


def slot_job(values: dict) -> dict:
    """What a startd keeps of a job it runs (SLOT_ATTRS), from the starter's ``values``."""
    return {a: values[a] for a in SLOT_ATTRS if a in values}


class StartdCalls:
    """``calls(cmd, address=None, **args)``: ``call`` on the startd at ``address``
    (``default()``'s when None), after the claim moves queued for it."""

    def __init__(self, call: Callable, default: Callable[[], str], log):
        self._call = call
        self._default = default
        self.log = log
        self._lock = threading.Lock()        # the queues
        self._sending = threading.Lock()     # one batch at a time: the startds see moves in order
        self._queued: dict[str, list[dict]] = {}
        self._wake = threading.Event()

    def __call__(self, cmd: str, address: str | None = None, **args):
        self.send_all()
        return self._call(cmd, address=address or self._default(), **args)

    def moved(self, address: str | None, move: dict) -> None:
        """Tell the startd at ``address``, soon, that ``move["from"]``'s slot and starter
        now hold ``move["claim"]`` for ``move["job"]`` in ``move["scratch"]``."""
        with self._lock:
            self._queued.setdefault(address or self._default(), []).append(move)
        self._wake.set()

    def flush(self, address: str) -> None:
        """Send the moves queued for ``address`` (after any batch being sent)."""
        with self._sending:
            with self._lock:
                moves = self._queued.pop(address, None)
            if moves:
                try:
                    self._call("claims_moved", address=address, moves=moves)
                except HTCondorException as exc:
                    self.log.info("could not tell %s of %d claim moves: %s", address, len(moves), exc)

    def send_queued(self) -> None:
        """(The sender thread's round.)  Wait for moves, gather for GATHER seconds, send
        each startd its own."""
        if not self._wake.wait(IDLE_WAIT):
            return
        time.sleep(GATHER)
        self._wake.clear()
        self.send_all()

    def send_all(self) -> None:
        """Send every startd the moves queued for it."""
        with self._lock:
            addresses = list(self._queued)
        for address in addresses:
            self.flush(address)
