"""Draining a startd: HTCondor's DRAIN_JOBS and CANCEL_DRAIN_JOBS.

A drain request takes the machine out of service: its slots advertise
``Draining = true``, the partitionable slot's State becomes ``Drained`` (Activity
``Retiring`` while jobs remain, ``Idle`` once none do) and its START the request's
``start_expr`` (else ``DEFAULT_DRAINING_START_EXPR``, false), so the negotiator
matches nothing to it, and a finished job's claim is not reused.  The running
jobs leave as the drain type says:

* ``Graceful`` (0): each job may run out its retirement time -- the machine's
  ``MAXJOBRETIREMENTTIME``, or the job's ``MaxJobRetirementTime`` if lower, from
  the job's start -- and is then vacated (soft kill, then the kill after the
  vacate time);
* ``Quick`` (10): vacated at once (soft kill);
* ``Fast`` (20): killed at once.

A vacated job goes back to idle in its schedd (an evicted event) and runs again
elsewhere or later.  When no job is left the drain is complete; ``on_completion``
then says what the startd does: nothing (stays drained until cancelled), resume,
reconfig and resume, restart, or exit for good.  ``check_expr`` must be true for
every slot ad or the request is refused.
"""

from __future__ import annotations

import uuid

from jobledger.eventcore import adwire
from jobledger.eventcore.enums import CompletionType, DrainType
from jobledger.eventcore.errors import HTCondorException

DEFAULT_START = "false"


class Drain:
    """One accepted drain request."""

    def __init__(self, how: int, on_completion: int, start_expr: str | None, reason: str | None,
                 now: float, retirement: float, default_start: str = DEFAULT_START):
        self.how = DrainType(how)
        self.on_completion = CompletionType(on_completion)
        self.start_expr = start_expr
        self.start = start_expr if start_expr is not None else default_start
        self.reason = reason if reason is not None else "by command"
        self.request_id = uuid.uuid4().hex
        self.began = int(now)
        self.retirement = max(0.0, retirement)
        self.signalled: set[str] = set()
        self.completed = False

    def deadline(self, slot: dict) -> float:
        """When the job of ``slot`` (a startd claim record) is to leave."""
        if self.how is not DrainType.Graceful:
            return float(self.began)
        retire = self.retirement
        own = slot.get("retirement")
        if isinstance(own, (int, float)) and not isinstance(own, bool) and own >= 0:
            retire = min(retire, float(own))
        return max(float(self.began), float(slot.get("since", self.began)) + retire)

    def due(self, claims: dict[str, dict], now: float) -> list[tuple[str, str]]:
        """(claim, "vacate" | "kill") for the jobs whose time to leave has come."""
        out = []
        for claim, slot in claims.items():
            if claim in self.signalled or not (any(slot["resources"].values()) or slot.get("within")) \
                    or not slot.get("pid"):   # (a job on an OCU's claim has the OCU's resources)
                continue      # (a starter being launched is told on the next step)
            if now >= self.deadline(slot):
                out.append((claim, "kill" if self.how is DrainType.Fast else "vacate"))
        return out

    def slot_attrs(self, busy: bool, partitionable: bool) -> dict:
        """What a slot ad says while this drain lasts."""
        attrs: dict = {"Draining": True, "DrainingRequestId": self.request_id, "DrainReason": self.reason,
                       "LastDrainStartTime": self.began, "Start": {"expr": self.start}}
        if partitionable:
            attrs.update(State="Drained", Activity="Retiring" if busy else "Idle")
        else:
            attrs.update(Activity="Retiring")
        return attrs


def check(expr: str | None, slot_ads: list[dict]) -> None:
    """Refuse a drain whose ``check_expr`` is not true for every slot (HTCondor's words)."""
    if expr is None:
        return
    try:
        adwire.check_constraint(expr)
    except Exception as exc:  # noqa: BLE001 - a bad expression is the caller's error
        raise HTCondorException(f"Invalid draining check expression {expr!r}: {exc}") from None
    for ad in slot_ads:
        if adwire.evaluate_expr(adwire.exprs_of(ad), expr) is not True:
            raise HTCondorException(f"Draining check expression {expr} is false for slot {ad.get('Name')}")


def check_args(how, on_completion, check_expr, start_expr, reason) -> tuple[int, int]:
    """The request's values, refused as the startd refuses them."""
    try:
        how = int(DrainType(int(how)))
        on_completion = int(CompletionType(int(on_completion)))
    except (TypeError, ValueError):
        raise HTCondorException("invalid drain type or completion") from None
    for name, value in (("check_expr", check_expr), ("start_expr", start_expr), ("reason", reason)):
        if value is not None and not isinstance(value, str):
            raise HTCondorException(f"{name} must be a string")
    if start_expr is not None:
        try:
            adwire.check_constraint(start_expr)
        except Exception as exc:  # noqa: BLE001
            raise HTCondorException(f"Invalid draining start expression {start_expr!r}: {exc}") from None
    return how, on_completion
