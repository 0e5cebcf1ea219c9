"""The negotiator's accountant: usage per submitter, published as Accounting ads.

Each cycle the negotiator hands ``Accountant.update`` the pool's Submitter
ads; a submitter's usage grows by the cores it is running times the time
since the last update (``AccumulatedUsage``), and its ``Priority`` is the
usual HTCondor priority: ``PriorityFactor`` (``DEFAULT_PRIO_FACTOR``) times
at least 0.5 -- the real user priority decays towards the cores in use with
half-life ``PRIORITY_HALFLIFE``.  ``ads()`` are the Accounting ads the
collector keeps (``condor_userprio`` reads them), plus the ``<none>`` group.
"""

from __future__ import annotations

import math

MIN_PRIORITY = 0.5


class Accountant:
    def __init__(self, negotiator_name: str, prio_factor: float = 1000.0, halflife: float = 86400.0):
        self.name = negotiator_name
        self.prio_factor = prio_factor
        self.halflife = halflife
        self.users: dict[str, dict] = {}
        self.last: float | None = None

    def update(self, submitters: list[dict], now: float) -> None:
        """Fold the Submitter ads (plain values: Name, RunningJobs, WeightedRunningJobs) in."""
        elapsed = 0.0 if self.last is None else max(0.0, now - self.last)
        self.last = now
        running: dict[str, float] = {}
        for ad in submitters:
            name = ad.get("Name")
            if isinstance(name, str) and name:
                used = ad.get("WeightedRunningJobs", ad.get("RunningJobs", 0))
                running[name] = running.get(name, 0.0) + (float(used) if isinstance(used, (int, float)) else 0.0)
        decay = 0.5 ** (elapsed / self.halflife) if self.halflife > 0 else 0.0
        for name in set(self.users) | set(running):
            user = self.users.setdefault(name, {"real": MIN_PRIORITY, "usage": 0.0, "begin": 0,
                                                "last": 0, "used": 0.0})
            used = running.get(name, 0.0)
            user["real"] = max(MIN_PRIORITY, user["real"] * decay + used * (1 - decay))
            user["usage"] += used * elapsed
            if used:
                user["begin"] = user["begin"] or int(now)
                user["last"] = int(now)
            user["used"] = used

    def ads(self) -> list[dict]:
        out = [{"MyType": "Accounting", "TargetType": "none", "Name": "<none>",
                "AccountingGroup": "<none>", "IsAccountingGroup": True,
                "NegotiatorName": self.name, "Priority": MIN_PRIORITY * self.prio_factor,
                "PriorityFactor": self.prio_factor, "ResourcesUsed": 0,
                "WeightedResourcesUsed": 0.0, "AccumulatedUsage": 0.0,
                "WeightedAccumulatedUsage": 0.0, "BeginUsageTime": 0, "LastUsageTime": 0,
                "ConfigQuota": 0.0, "EffectiveQuota": 0.0, "SubtreeQuota": 0.0,
                "SurplusPolicy": "byquota", "Requested": 0.0}]
        for name, user in sorted(self.users.items()):
            out.append({
                "MyType": "Accounting", "TargetType": "none", "Name": name,
                "AccountingGroup": "<none>", "IsAccountingGroup": False,
                "NegotiatorName": self.name, "Priority": user["real"] * self.prio_factor,
                "PriorityFactor": self.prio_factor, "ResourcesUsed": int(math.ceil(user["used"])),
                "WeightedResourcesUsed": user["used"], "AccumulatedUsage": user["usage"],
                "WeightedAccumulatedUsage": user["usage"], "BeginUsageTime": user["begin"],
                "LastUsageTime": user["last"],
            })
        return out
