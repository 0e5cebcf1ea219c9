"""``htcondor.Startd``: draining a startd and vacating its jobs (``daemons.startd_drain``).

``drainJobs`` answers the request id that ``cancelDrainJobs`` takes; a request the
startd refuses (already draining, ``check_expr`` false for a slot) is an
``HTCondorException`` naming why.  v1's ``drainJobs`` took a bool for what to do on
completion (True: resume): a bool is read so.
"""

from __future__ import annotations

from jobledger.daemons import ipc
from jobledger.daemons.client.located import Located
from jobledger.eventcore.classad import ClassAd, ExprTree
from jobledger.eventcore.enums import CompletionType, DaemonType, DrainType, VacateType
from jobledger.eventcore.enums_v1 import as_v2 as _as_enum


def as_v2(value, cls):
    """An enum member of ``cls`` (or v1's of the same name), or a plain number of one."""
    member = _as_enum(value, cls)
    if member is None and isinstance(value, int) and not isinstance(value, bool):
        member = cls(value)
    return member


def _expr_text(value, name: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, ExprTree):
        return str(value)
    raise TypeError(f"{name} must be a string")


class Startd(Located):
    """The startd client (htcondor2.Startd)."""

    daemon_type = DaemonType.Startd

    def drainJobs(self, drain_type=DrainType.Graceful, on_completion=CompletionType.Nothing,
                  check_expr=None, start_expr=None, reason: str | None = None) -> str:
        how = as_v2(drain_type, DrainType)
        if how is None:
            raise TypeError("drain_type must be a DrainType")
        if isinstance(on_completion, bool):
            on_completion = CompletionType.Resume if on_completion else CompletionType.Nothing
        completion = as_v2(on_completion, CompletionType)
        if completion is None:
            raise TypeError("on_completion must be a CompletionType")
        if reason is not None and not isinstance(reason, str):
            raise TypeError("reason must be a string")
        return ipc.call(self._addr, "drain", timeout=60, how=int(how), on_completion=int(completion),
                        check_expr=_expr_text(check_expr, "check_expr"),
                        start_expr=_expr_text(start_expr, "start_expr"), reason=reason)

    def cancelDrainJobs(self, request_id: str | None = None) -> None:
        if request_id is not None and not isinstance(request_id, str):
            raise TypeError("request_id must be a string")
        ipc.call(self._addr, "cancel_drain", timeout=60, request_id=request_id)

    def vacateSlot(self, slot_name: str | None = None, vacate_fast=VacateType.Graceful) -> None:
        if not slot_name:
            raise ValueError("slot_name must be a non-empty string")
        ipc.call(self._addr, "vacate", timeout=60, slot=slot_name, fast=_fast(vacate_fast))

    def vacate(self, vacate_fast=VacateType.Graceful) -> None:
        ipc.call(self._addr, "vacate", timeout=60, slot=None, fast=_fast(vacate_fast))


def _fast(vacate_fast) -> bool:
    if vacate_fast is None:
        return False
    how = as_v2(vacate_fast, VacateType)
    if how is None:
        raise TypeError("vacate_fast must be a VacateType")
    return how is VacateType.Fast
