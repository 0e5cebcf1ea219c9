"""The lifecycle of a claim, the schedd's handle on one run of one job: one state table.

A claim id is made for one start of one job (``daemons.schedd.runs.Runs.reserve``)
and never reused; the startd's slot may go on to the next job (claim reuse),
but under a new claim id.  From the schedd's side a claim is in one of:

========  ==========================================================  ===============
state     what holds it                                               memory/journal
========  ==========================================================  ===============
STARTING  reserved for the job; its starter is being started and the  ``Runs`` only
          run's EXECUTE not yet committed (the job reads idle)
ACTIVE    the journal's: the job runs under it (``ClaimId``, EXECUTE)  journal
KILLED    its starter was told to kill the job (a hold or removal, or  (the startd)
          an EXECUTE refused because one committed first)
CLOSED    over: its run's outcome recorded, its starter gone, or the   journal
          start failed before any starter ran
========  ==========================================================  ===============

``TABLE`` maps (state, event) to the next state; anything else is a bug in
the part that reported it (``ClaimError``).  Events:

- ``executed``: the run's EXECUTE (with its claim) was committed;
- ``refused``: the EXECUTE was refused (the job was held or removed since it
  was read: the store's ``StaleDecision``) and the starter told to kill;
- ``failed``: the start failed (the startd refused, the job was no longer
  idle when read): no starter runs for it;
- ``stopped``: an action or the policy ended the run (hold, remove) in the
  same commit that cleared the claim from the job, and told its starter;
- ``signalled``: vacate, suspend or continue was sent; the run goes on until
  its outcome;
- ``ended``: the run's outcome was recorded (exit, eviction, a hold by the
  exit policy), or its starter vanished and the job was requeued;
- ``stale``: a report about a claim that is no longer its job's run (a
  retried report, or the outcome of a killed run): dropped.

The safety property the table encodes: a claim whose starter was started
ends ``KILLED`` or ``CLOSED`` by its own outcome; no path leaves a starter
running for a job that is not running under its claim.  Pure: the parts
keep the state, this module only says which moves exist.
"""

from __future__ import annotations

import enum

__all__ = ["ClaimState", "ClaimEvent", "TABLE", "ClaimError", "next_state", "TERMINAL"]


class ClaimState(enum.Enum):
    STARTING = "starting"
    ACTIVE = "active"
    KILLED = "killed"
    CLOSED = "closed"


class ClaimEvent(enum.Enum):
    EXECUTED = "executed"
    REFUSED = "refused"
    FAILED = "failed"
    STOPPED = "stopped"
    SIGNALLED = "signalled"
    ENDED = "ended"
    STALE = "stale"


S, E = ClaimState, ClaimEvent
TABLE: dict[tuple[ClaimState, ClaimEvent], ClaimState] = {
    (S.STARTING, E.EXECUTED): S.ACTIVE,
    (S.STARTING, E.REFUSED): S.KILLED,
    (S.STARTING, E.FAILED): S.CLOSED,
    (S.ACTIVE, E.STOPPED): S.KILLED,
    (S.ACTIVE, E.SIGNALLED): S.ACTIVE,
    (S.ACTIVE, E.ENDED): S.CLOSED,
    (S.KILLED, E.STALE): S.KILLED,      # the killed run's outcome comes back: dropped
    (S.CLOSED, E.STALE): S.CLOSED,      # a retried report
}
TERMINAL = frozenset({S.KILLED, S.CLOSED})


class ClaimError(RuntimeError):
    """A part reported a claim event the table does not allow in the claim's state."""

    def __init__(self, claim: str, state: ClaimState, event: ClaimEvent):
        self.claim, self.state, self.event = claim, state, event
        super().__init__(f"claim {claim}: {event.value} is not possible when {state.value}")


def next_state(claim: str, state: ClaimState, event: ClaimEvent) -> ClaimState:
    """The state ``claim`` moves to from ``state`` on ``event`` (``ClaimError``: no such move)."""
    try:
        return TABLE[state, event]
    except KeyError:
        raise ClaimError(claim, state, event) from None
