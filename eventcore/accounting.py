"""User priorities and fair share, as HTCondor's accountant and negotiator compute them (pure).

The manual's "User Priorities and Negotiation": each submitter (``user@uid_domain``,
or ``group.user@uid_domain`` for a job with an accounting group) has a *real user
priority* (RUP) that decays towards the resources it uses with half-life
``PRIORITY_HALFLIFE``::

    beta = 0.5 ** (elapsed / halflife)
    RUP  = max(0.5, RUP * beta + used * (1 - beta))

and an *effective user priority* ``EUP = RUP * PriorityFactor``; lower is better.
A negotiation cycle divides the pool (the slot weight of every slot, claimed or
not) among the submitters that want resources in inverse proportion to their
EUPs -- the "pie" -- and each may claim its share minus what it already uses,
never past its ceiling.  What a spin of the pie leaves unclaimed (a submitter
had fewer jobs than its share) goes round again to those still wanting more.
"""

from __future__ import annotations

import math
from typing import Iterable, Mapping

MIN_PRIORITY = 0.5          # the accountant's floor of a real priority
DEFAULT_PRIO_FACTOR = 1000.0
NICE_USER_PRIO_FACTOR = 1e10
NICE_USER_PREFIX = "nice-user."
NO_CEILING = -1


class Customer:
    """One submitter's accounting record (the accountant's ``Customer.<name>``)."""

    __slots__ = ("name", "real", "factor", "factor_set", "usage", "weighted_usage", "begin", "last",
                 "used", "weighted_used", "ceiling", "floor")

    def __init__(self, name: str, factor: float):
        self.name = name
        self.real = MIN_PRIORITY
        self.factor = factor
        self.factor_set = False      # set by setFactor (kept) rather than the configured default
        self.usage = 0.0             # AccumulatedUsage: seconds of resources held
        self.weighted_usage = 0.0    # WeightedAccumulatedUsage: slot-weight (cores) x seconds
        self.begin = 0               # BeginUsageTime
        self.last = 0                # LastUsageTime
        self.used = 0                # ResourcesUsed: slots held now
        self.weighted_used = 0.0     # WeightedResourcesUsed: their slot weight (cores)
        self.ceiling = NO_CEILING
        self.floor = 0

    @property
    def effective(self) -> float:
        return self.real * self.factor

    def age(self, elapsed: float, halflife: float, now: int) -> None:
        """``elapsed`` seconds more of the resources it holds now."""
        if elapsed > 0:
            beta = 0.5 ** (elapsed / halflife) if halflife > 0 else 0.0
            self.real = self.real * beta + self.weighted_used * (1 - beta)
            self.usage += self.used * elapsed
            self.weighted_usage += self.weighted_used * elapsed
        self.real = max(MIN_PRIORITY, self.real)
        if self.used:
            self.begin = self.begin or now
            self.last = now

    def values(self) -> dict:
        return {name: getattr(self, name) for name in self.__slots__}

    @classmethod
    def from_values(cls, values: Mapping) -> "Customer":
        customer = cls(str(values["name"]), float(values.get("factor", DEFAULT_PRIO_FACTOR)))
        for name in cls.__slots__[1:]:
            if name in values:
                setattr(customer, name, type(getattr(customer, name))(values[name]))
        return customer


def default_factor(name: str, configured: float, nice: float = NICE_USER_PRIO_FACTOR) -> float:
    """The factor a new submitter starts with: nice users' is NICE_USER_PRIO_FACTOR."""
    return nice if name.startswith(NICE_USER_PREFIX) else configured


def submitter_of(owner: str | None, accounting_group: str | None, domain: str) -> str:
    """The accounting principal of a job: its AccountingGroup, else its Owner, at ``domain``."""
    who = accounting_group or owner or ""
    return who if "@" in who else f"{who}@{domain}"


def shares(pool: float, wanting: Iterable[tuple[str, float]]) -> dict[str, float]:
    """Each submitter's share of ``pool`` (slot weight), inversely proportional to its EUP."""
    weights = {name: 1.0 / max(eup, 1e-9) for name, eup in wanting}
    total = sum(weights.values())
    return {name: pool * w / total for name, w in weights.items()} if total else {}


def first_limits(pool: float, customers: Mapping[str, Customer], wanting: Iterable[str]) -> dict[str, float]:
    """The first spin: a submitter may claim its share of the whole pool less what it
    holds, and never past its ceiling (slot weight; may be 0)."""
    names = sorted(set(wanting))
    share = shares(pool, [(n, customers[n].effective) for n in names])
    return {n: _capped(customers[n], share[n] - customers[n].weighted_used) for n in names}


def later_limits(left: float, customers: Mapping[str, Customer], wanting: Iterable[str],
                 taken: Mapping[str, float]) -> dict[str, float]:
    """A later spin: what is still free is divided again among those that want more
    (``taken``: what each claimed in this cycle so far)."""
    names = sorted(set(wanting))
    share = shares(left, [(n, customers[n].effective) for n in names])
    return {n: _capped(customers[n], share[n], taken.get(n, 0.0)) for n in names}


def _capped(customer: Customer, limit: float, taken: float = 0.0) -> float:
    if customer.ceiling >= 0:
        limit = min(limit, customer.ceiling - customer.weighted_used - taken)
    return max(0.0, limit)


def order(customers: Mapping[str, Customer], names: Iterable[str]) -> list[str]:
    """Submitters best (lowest EUP) first, ties by name."""
    return sorted(names, key=lambda n: (customers[n].effective, n))


def whole(limit: float) -> int:
    """A limit in whole cores, rounded to nearest (a 2.5 share gets 2 or 3 over cycles)."""
    return int(math.floor(limit + 0.5 + 1e-9))
