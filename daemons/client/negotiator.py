"""``htcondor.Negotiator``: the pool's user priorities and usage (the negotiator's accountant).

Each method is one of HTCondor's negotiator commands (SET_PRIORITY, GET_PRIORITY,
...): the accountant (``daemons.accounting``) changes or reports its records.  A user
is a fully qualified accounting principal, ``user@uid.domain``.  Argument checks are
htcondor2's: a user that is not a string is a ``TypeError``, one without ``@`` a
``ValueError``; ``setCeiling`` refuses ``-1`` as htcondor2 25.x does (its check is
``ceiling <= -1``, though its text says "greater than or equal to -1").
"""

from __future__ import annotations

from jobledger.daemons import ipc
from jobledger.daemons.client.located import Located
from jobledger.eventcore.classad import ClassAd
from jobledger.eventcore.enums import DaemonType
from jobledger.eventcore.errors import HTCondorValueError


def _validate_user(user) -> None:
    if not isinstance(user, str):
        raise TypeError("user must be a string")
    if "@" not in user:
        raise HTCondorValueError("You must specify the submitter (user@uid.domain)")


def _number(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number")
    return value


def numbered_ads(ad: dict) -> list[ClassAd]:
    """The records of a numbered ad (``Name1``, ``Priority1``, ``Name2``...), in order."""
    records: dict[int, dict] = {}
    for attr, value in ad.items():
        stem = attr.rstrip("0123456789")
        if stem and stem != attr:
            records.setdefault(int(attr[len(stem):]), {})[stem] = value
    return [ClassAd(records[index]) for index in sorted(records) if index > 0]


class Negotiator(Located):
    """The negotiator client (htcondor2.Negotiator)."""

    daemon_type = DaemonType.Negotiator

    def _command(self, what: str, user: str | None = None, value=None) -> None:
        ipc.call(self._addr, "accountant", timeout=30, what=what, user=user, value=value)

    def deleteUser(self, user: str) -> None:
        _validate_user(user)
        self._command("deleteUser", user)

    def getPriorities(self, rollup: bool = False) -> list[ClassAd]:
        """The accounting records, one ClassAd each (the ``<none>`` group and every
        submitter); ``rollup`` sums groups over their subgroups (no hierarchy here:
        the same records)."""
        return numbered_ads(ipc.call(self._addr, "priorities", timeout=30))

    def getResourceUsage(self, user: str) -> list[ClassAd]:
        """The slots ``user`` holds: ``Name`` and ``StartTime`` of each."""
        _validate_user(user)
        return numbered_ads(ipc.call(self._addr, "resources", timeout=30, user=user))

    def resetAllUsage(self) -> None:
        self._command("resetAllUsage")

    def resetUsage(self, user: str) -> None:
        _validate_user(user)
        self._command("resetUsage", user)

    def setBeginUsage(self, user: str, when: int) -> None:
        _validate_user(user)
        self._command("setBeginUsage", user, int(_number(when, "when")))

    def setCeiling(self, user: str, ceiling: int) -> None:
        _validate_user(user)
        if _number(ceiling, "ceiling") <= -1:
            raise HTCondorValueError("Ceiling must be greater than -1.")
        self._command("setCeiling", user, int(ceiling))

    def setLastUsage(self, user: str, when: int) -> None:
        _validate_user(user)
        self._command("setLastUsage", user, int(_number(when, "when")))

    def setFactor(self, user: str, factor: float) -> None:
        _validate_user(user)
        if _number(factor, "factor") < 1:
            raise HTCondorValueError("Priority factors must be >= 1")
        self._command("setFactor", user, float(factor))

    def setPriority(self, user: str, priority: float) -> None:
        _validate_user(user)
        if _number(priority, "priority") < 0:
            raise HTCondorValueError("User priority must be non-negative")
        self._command("setPriority", user, float(priority))

    def setUsage(self, user: str, usage: float) -> None:
        """The accumulated usage (HTCondor's accountant stores the value as given:
        ``condor_userprio`` shows it divided by 3600 as hours)."""
        _validate_user(user)
        if _number(usage, "usage") < 0:
            raise HTCondorValueError("Usage must be non-negative")
        self._command("setUsage", user, float(usage))
