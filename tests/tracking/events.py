"""Small event values for tracker tests, shaped like ``JobEvent`` (type, ids, time, get)."""

from __future__ import annotations

from typing import Any

import attrs


@attrs.frozen
class Ev:
    type: int
    cluster: int
    proc: int
    timestamp: int
    attrs: dict[str, Any] = attrs.field(factory=dict)

    def get(self, key: str, default: Any = None) -> Any:
        return self.attrs.get(key, default)


def submit(c, p, t):
    return Ev(0, c, p, t)


def execute(c, p, t, host="slot1@ep"):
    return Ev(1, c, p, t, {"SlotName": host})


def terminated(c, p, t, code=0, signal=None):
    if signal is None:
        return Ev(5, c, p, t, {"TerminatedNormally": True, "ReturnValue": code})
    return Ev(5, c, p, t, {"TerminatedNormally": False, "TerminatedBySignal": signal})


def held(c, p, t, code=1, reason="via condor_hold (by user alice)"):
    return Ev(12, c, p, t, {"HoldReason": reason, "HoldReasonCode": code, "HoldReasonSubCode": 0})


def released(c, p, t):
    return Ev(13, c, p, t)


def aborted(c, p, t):
    return Ev(9, c, p, t)


def evicted(c, p, t):
    return Ev(4, c, p, t, {"TerminatedAndRequeued": False})
