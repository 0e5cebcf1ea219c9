"""The negotiator's accountant: one record per submitter, kept on disk, shown as Accounting ads.

Each negotiation cycle (and each ad update) hands ``Accountant.update`` what every
submitter holds now -- the claimed dynamic slots of the pool, by their
``AccountingGroup`` or ``RemoteUser`` -- and the records age by the time since the
last update (``eventcore.accounting.Customer.age``: half-life decay, accumulated
usage).  The administrator's commands (``htcondor.Negotiator``,
``condor_userprio -setprio ...``) change records through ``command``.

The state survives a restart of the negotiator: it is written, whole, to
``$(SPOOL)/Accountantnew.log`` (HTCondor's name for the accountant's file) in the
ClassAd log form HTCondor's own accountant writes -- ``101`` a new record,
``103`` one of its attributes -- through a temporary file renamed over it, so a
crash leaves the old state or the new one.  Changes by command are written at
once; usage at most every ``SAVE_EVERY`` seconds.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from jobledger.eventcore import adwire
from jobledger.eventcore.accounting import (DEFAULT_PRIO_FACTOR, MIN_PRIORITY, NICE_USER_PRIO_FACTOR,
                                            NO_CEILING, Customer, default_factor)
from jobledger.eventcore.errors import HTCondorException, HTCondorValueError

LOG_NAME = "Accountantnew.log"
SAVE_EVERY = 5.0
MAX_LOG_BYTES = 64 << 20     # an accountant file past this is refused (named), not read
# record attribute -> (Customer field, kind) as HTCondor's accountant names them in its log
LOG_ATTRS = {"Priority": ("real", float), "PriorityFactor": ("factor", float),
             "AccumulatedUsage": ("usage", float), "WeightedAccumulatedUsage": ("weighted_usage", float),
             "BeginUsageTime": ("begin", int), "LastUsageTime": ("last", int),
             "ResourcesUsed": ("used", int), "WeightedResourcesUsed": ("weighted_used", float),
             "Ceiling": ("ceiling", int), "Floor": ("floor", int)}
COMMANDS = ("setPriority", "setFactor", "setUsage", "setCeiling", "setFloor", "setBeginUsage",
            "setLastUsage", "resetUsage", "resetAllUsage", "deleteUser")


class Accountant:
    def __init__(self, negotiator_name: str, spool: Path | None = None,
                 prio_factor: float = DEFAULT_PRIO_FACTOR, halflife: float = 86400.0,
                 nice_factor: float = NICE_USER_PRIO_FACTOR, log=None):
        self.name = negotiator_name
        self.prio_factor = prio_factor
        self.nice_factor = nice_factor
        self.halflife = halflife
        self.customers: dict[str, Customer] = {}
        self.matches: dict[str, list[dict]] = {}   # submitter -> its slots (Name, StartTime)
        self.last: float | None = None
        self.path = Path(spool) / LOG_NAME if spool is not None else None
        self._saved = 0.0
        self._log = log
        if self.path is not None:
            self.load()

    # -- records -----------------------------------------------------------------
    def customer(self, name: str) -> Customer:
        found = self.customers.get(name)
        if found is None:
            found = self.customers[name] = Customer(name, default_factor(name, self.prio_factor,
                                                                         self.nice_factor))
        return found

    def update(self, held: dict[str, list[dict]], now: float) -> None:
        """Age every record to ``now``; ``held``: submitter -> the slots it holds now
        (``{"Name", "Weight", "StartTime"}``), which it holds until the next update."""
        elapsed = 0.0 if self.last is None else max(0.0, now - self.last)
        self.last = now
        for customer in self.customers.values():   # what was held since the last update
            customer.age(elapsed, self.halflife, int(now))
        for name in held:
            self.customer(name)
        for name, customer in self.customers.items():
            slots = held.get(name, [])
            customer.used = len(slots)
            customer.weighted_used = float(sum(s.get("Weight", 1) for s in slots))
            customer.age(0.0, self.halflife, int(now))
        self.matches = {name: [s for s in slots if not s.get("Pending")] for name, slots in held.items()}
        if self.path is not None and now - self._saved >= SAVE_EVERY:
            self.save(now)

    def command(self, what: str, user: str | None = None, value=None, now: float | None = None) -> None:
        """An administrator's change (HTCondor's SET_PRIORITY, SET_PRIORITYFACTOR, ...)."""
        now = time.time() if now is None else now
        if what not in COMMANDS:
            raise HTCondorValueError(f"unknown accountant command {what!r}")
        if what == "resetAllUsage":
            for customer in self.customers.values():
                _reset(customer, now)
        elif what == "deleteUser":
            self.customers.pop(_user(user), None)
        else:
            customer = self.customer(_user(user))
            if what == "resetUsage":
                _reset(customer, now)
            else:
                _set(customer, what, value)
        self.save(now)

    # -- what others read ------------------------------------------------------------
    def ads(self, now: float | None = None) -> list[dict]:
        """The Accounting ads (the ``<none>`` group first, then every submitter)."""
        last = int(self.last if self.last is not None else (now or time.time()))
        group = {"MyType": "Accounting", "TargetType": "none", "Name": "<none>",
                 "AccountingGroup": "<none>", "IsAccountingGroup": True, "NegotiatorName": self.name,
                 "Priority": MIN_PRIORITY * self.prio_factor, "PriorityFactor": self.prio_factor,
                 "ResourcesUsed": sum(c.used for c in self.customers.values()),
                 "WeightedResourcesUsed": sum(c.weighted_used for c in self.customers.values()),
                 "AccumulatedUsage": sum(c.usage for c in self.customers.values()),
                 "WeightedAccumulatedUsage": sum(c.weighted_usage for c in self.customers.values()),
                 "BeginUsageTime": min([c.begin for c in self.customers.values() if c.begin] or [0]),
                 "LastUsageTime": max([c.last for c in self.customers.values()] or [0]),
                 "ConfigQuota": 0.0, "EffectiveQuota": 0.0, "SubtreeQuota": 0.0,
                 "SurplusPolicy": "byquota", "Requested": 0.0, "LastUpdate": last}
        out = [group]
        for name, c in sorted(self.customers.items()):
            out.append({
                "MyType": "Accounting", "TargetType": "none", "Name": name,
                "AccountingGroup": "<none>", "IsAccountingGroup": False, "NegotiatorName": self.name,
                "Priority": c.effective, "PriorityFactor": c.factor, "ResourcesUsed": c.used,
                "WeightedResourcesUsed": c.weighted_used, "AccumulatedUsage": c.usage,
                "WeightedAccumulatedUsage": c.weighted_usage, "BeginUsageTime": c.begin,
                "LastUsageTime": c.last, "Ceiling": c.ceiling, "Floor": c.floor, "LastUpdate": last,
            })
        return out

    def priorities(self) -> dict:
        """GET_PRIORITY's one ad: every record's attributes numbered 1..N, with NumSubmittors."""
        ads = self.ads()
        out: dict = {"LastUpdate": ads[0]["LastUpdate"], "NumSubmittors": len(ads)}
        for index, ad in enumerate(ads, 1):
            for name, value in ad.items():
                if name not in ("MyType", "TargetType", "NegotiatorName", "LastUpdate"):
                    out[f"{name}{index}"] = value
        return out

    def resources(self, user: str) -> dict:
        """GET_RESLIST's one ad: the slots ``user`` holds (Name1, StartTime1, ...)."""
        out: dict = {}
        for index, slot in enumerate(self.matches.get(_user(user), []), 1):
            out[f"Name{index}"] = slot["Name"]
            out[f"StartTime{index}"] = int(slot.get("StartTime", 0))
        return out

    # -- the file ------------------------------------------------------------------------
    def save(self, now: float | None = None) -> None:
        if self.path is None:
            return
        self._saved = time.time() if now is None else now
        lines = ["101 Accountant. Accountant none",
                 f"103 Accountant. LastUpdateTime {int(self.last or self._saved)}"]
        for name, c in sorted(self.customers.items()):
            key = f"Customer.{name}"
            lines.append(f"101 {key} Customer none")
            for attr, (field, _) in LOG_ATTRS.items():
                if field == "factor" and not c.factor_set:
                    continue     # the configured default applies (it may change)
                lines.append(f"103 {key} {attr} {adwire.literal_text(getattr(c, field))}")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temp = self.path.with_name(self.path.name + ".tmp")
        with open(temp, "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, self.path)

    def load(self) -> None:
        """Read the accountant's file; a bad line is skipped and named in the log."""
        assert self.path is not None
        try:
            if self.path.stat().st_size > MAX_LOG_BYTES:
                raise HTCondorException(f"{self.path}: larger than {MAX_LOG_BYTES} bytes, not read")
            text = self.path.read_bytes().decode("utf-8", errors="replace")
        except FileNotFoundError:
            return
        records: dict[str, dict] = {}
        for number, line in enumerate(text.splitlines(), 1):
            parts = line.split(" ", 3)
            if parts[0] in ("101", "102") and len(parts) >= 2:
                if parts[0] == "101":
                    records.setdefault(parts[1], {})
                else:
                    records.pop(parts[1], None)
            elif parts[0] == "103" and len(parts) == 4:
                records.setdefault(parts[1], {})[parts[2]] = parts[3]
            elif line.strip() and self._log is not None:
                self._log.info("%s line %d: not an accountant record, skipped", self.path, number)
        for key, attrs in records.items():
            if key == "Accountant.":
                value = _number(attrs.get("LastUpdateTime"))
                self.last = float(value) if value is not None else None
            elif key.startswith("Customer."):
                self._restore(key[len("Customer."):], attrs)

    def _restore(self, name: str, attrs: dict) -> None:
        customer = self.customer(name)
        for attr, (field, kind) in LOG_ATTRS.items():
            value = _number(attrs.get(attr))
            if value is not None:
                setattr(customer, field, kind(value))
                if field == "factor":
                    customer.factor_set = True


def _number(text: str | None):
    if text is None:
        return None
    try:
        value = adwire.literal(text)
    except Exception:  # noqa: BLE001 - a damaged value is skipped
        return None
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _user(user) -> str:
    if not isinstance(user, str) or "@" not in user:
        raise HTCondorValueError("You must specify the submitter (user@uid.domain)")
    return user


def _reset(customer: Customer, now: float) -> None:
    customer.usage = customer.weighted_usage = 0.0
    customer.begin = int(now)


def _set(customer: Customer, what: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise HTCondorValueError(f"{what}: the value must be a number")
    if what == "setPriority":
        if value < 0:
            raise HTCondorValueError("User priority must be non-negative")
        customer.real = float(value)
    elif what == "setFactor":
        if value < 1:
            raise HTCondorValueError("Priority factors must be >= 1")
        customer.factor, customer.factor_set = float(value), True
    elif what == "setUsage":
        if value < 0:
            raise HTCondorValueError("Usage must be non-negative")
        customer.usage = customer.weighted_usage = float(value)
    elif what == "setCeiling":
        if value < NO_CEILING:
            raise HTCondorValueError("Ceiling must be greater than -1.")
        customer.ceiling = int(value)
    elif what == "setFloor":
        if value < 0:
            raise HTCondorValueError("floor must be greater than or equal to 0.")
        customer.floor = int(value)
    elif what == "setBeginUsage":
        customer.begin = int(value)
    elif what == "setLastUsage":
        customer.last = int(value)
