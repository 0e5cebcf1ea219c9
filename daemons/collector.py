"""condor_collector's job: keep the pool's ads, answer queries and locates.

Ads arrive by ``advertise`` (daemons every UPDATE_INTERVAL, users through
``Collector.advertise``) and are kept by (MyType, Name) -- a later ad with
the same key replaces the earlier one.  Each ad gets ``LastHeardFrom`` and
expires after ``CLASSAD_LIFETIME`` seconds (or its own ``ClassAdLifetime``)
without an update.  ``invalidate`` removes ads.

Queries select by ad type (htcondor2's ``AdType``, through its ``MyType``;
``Any`` selects all), a ClassAd constraint and a projection.  Ads travel in
the wire form of ``eventcore/adwire.py``.
"""

from __future__ import annotations

import threading
import time

from jobledger.eventcore import adwire
from jobledger.daemons.daemon import Daemon, main_for
from jobledger.daemons.token_requests import TokenRequests
from jobledger.eventcore.enums import AdType, DaemonType

# MyType of the daemons ``locate`` can find.
DAEMON_MYTYPE = {
    DaemonType.Master: "DaemonMaster", DaemonType.Schedd: "Scheduler",
    DaemonType.Startd: "Machine", DaemonType.Collector: "Collector",
    DaemonType.Negotiator: "Negotiator", DaemonType.Credd: "CredD",
    DaemonType.Generic: "Generic", DaemonType.HAD: "HAD", DaemonType.Placementd: "PlacementD",
}
# MaxJobsPerSubmission rides along so a client checks a submit against the schedd's own limit.
LOCATE_PROJECTION = ["MyAddress", "AddressV1", "CondorVersion", "CondorPlatform", "Name", "Machine",
                     "MyType", "MaxJobsPerSubmission"]
# Invalidate commands name the MyType they remove.
INVALIDATE_MYTYPE = {
    "INVALIDATE_STARTD_ADS": "Machine", "INVALIDATE_SCHEDD_ADS": "Scheduler",
    "INVALIDATE_MASTER_ADS": "DaemonMaster", "INVALIDATE_COLLECTOR_ADS": "Collector",
    "INVALIDATE_NEGOTIATOR_ADS": "Negotiator", "INVALIDATE_SUBMITTOR_ADS": "Submitter",
    "INVALIDATE_LICENSE_ADS": "License", "INVALIDATE_ACCOUNTING_ADS": "Accounting",
}


def text_of(ad: dict, name: str) -> str:
    """A string attribute of an expr-text ad ("" when absent or not a string literal)."""
    try:
        value = adwire.literal(ad.get(name))
    except adwire.NotLiteral:
        return ""
    return value if isinstance(value, str) else ""


def ad_key(ad: dict) -> tuple[str, str]:
    return (text_of(ad, "MyType").lower(), text_of(ad, "Name").lower())


class AdStore:
    """The collector's ads (thread-safe, in memory; daemons re-advertise after a restart)."""

    def __init__(self, lifetime: float):
        self.lifetime = lifetime
        self._ads: dict[tuple[str, str], tuple[float, dict]] = {}
        self._generic: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def update(self, ads: list[dict], now: float, peer_uid: int, generic: bool = False) -> int:
        """Keep ``ads`` (replacing same MyType+Name; an ad without a Name is dropped);
        ``generic``: sent as UPDATE_AD_GENERIC.  Returns how many were kept."""
        kept = 0
        with self._lock:
            for ad in ads:
                if not isinstance(ad, dict):
                    raise TypeError("an ad must be a ClassAd")
                if not all(isinstance(k, str) and isinstance(v, str) for k, v in ad.items()):
                    raise TypeError("an ad maps attribute names to expression text")
                if not text_of(ad, "Name"):
                    continue  # no key to keep it under: HTCondor's collector drops it too
                stored = dict(ad)
                stored["LastHeardFrom"] = str(int(now))
                stored.setdefault("AuthenticatedIdentity", adwire.quote(f"uid{peer_uid}@localhost"))
                try:
                    lifetime = adwire.literal(ad.get("ClassAdLifetime"))
                except adwire.NotLiteral:
                    lifetime = None
                expiry = now + (lifetime if type(lifetime) in (int, float) else self.lifetime)
                key = ad_key(stored)
                self._ads[key] = (expiry, stored)
                if generic:
                    self._generic.add(key)
                else:
                    self._generic.discard(key)
                kept += 1
        return kept

    def invalidate(self, mytype: str | None, constraint: str | None) -> int:
        with self._lock:
            doomed = [key for key, (_, ad) in self._ads.items()
                      if (mytype is None or key[0] == mytype.lower())
                      and adwire.matches(constraint, ad)]
            for key in doomed:
                del self._ads[key]
                self._generic.discard(key)
        return len(doomed)

    def select(self, mytype: str | None, constraint: str | None, now: float,
               generic: bool = False) -> list[dict]:
        """Live ads of ``mytype`` (None: all; ``generic``: those sent as generic ads)."""
        with self._lock:
            for key in [k for k, (expiry, _) in self._ads.items() if expiry < now]:
                del self._ads[key]
                self._generic.discard(key)
            if generic:
                candidates = [ad for key, (_, ad) in self._ads.items() if key in self._generic]
            else:
                candidates = [ad for key, (_, ad) in self._ads.items()
                              if mytype is None or key[0] == mytype.lower()]
        return [ad for ad in candidates if adwire.matches(constraint, ad)]


class Collector(Daemon):
    name = "collector"
    log_name = "CollectorLog"

    def __init__(self, config_file: str | None = None):
        super().__init__(config_file)
        self.store = AdStore(self.config_float("CLASSAD_LIFETIME", 900))

    def handlers(self) -> dict:
        handlers = super().handlers()
        tokens = TokenRequests(lambda name: self.config(name, "") or None, self._local_identity)
        handlers.update({
            "advertise": self._advertise,
            "invalidate": self._invalidate,
            "query": self._query,
            "locate": self._locate,
            "token_request": tokens.request,
            "token_request_result": tokens.result,
            "token_request_list": tokens.list,
            "token_request_approve": tokens.approve,
            "token_request_auto_approve": tokens.auto_approve,
            "token_fetch": tokens.fetch,
        })
        return handlers

    def _local_identity(self, peer: dict) -> str:
        """The pool's own user on this machine acts as the pool (condor@TRUST_DOMAIN)."""
        domain = self.config("TRUST_DOMAIN", "") or self.config("UID_DOMAIN", "") or self.host
        return f"condor@{domain}"

    def _advertise(self, peer, ads, command: str = "UPDATE_AD_GENERIC") -> int:
        if command.startswith("INVALIDATE"):
            total = 0
            for ad in ads:
                total += self.store.invalidate(INVALIDATE_MYTYPE.get(command, text_of(ad, "MyType") or None),
                                               _invalidate_constraint(ad))
            return total
        return self.store.update(ads, time.time(), peer["uid"], generic=command == "UPDATE_AD_GENERIC")

    def _invalidate(self, peer, mytype=None, constraint=None) -> int:
        return self.store.invalidate(mytype, constraint)

    def _query(self, peer, ad_type: int = int(AdType.Any), constraint=None, projection=None):
        kind = AdType(ad_type)
        mytype = None if kind is AdType.Any else kind.my_type
        ads = self.store.select(mytype, constraint or None, time.time(), generic=kind is AdType.Generic)
        if mytype is None:       # as HTCondor's collector: private ads answer only their own ad type
            ads = [ad for ad in ads if text_of(ad, "MyType") != "MachinePrivate"]
        if projection:
            keep = {name.lower() for name in projection} | {"mytype", "targettype"}
            ads = [{k: v for k, v in ad.items() if k.lower() in keep} for ad in ads]
        return ads

    def _locate(self, peer, daemon_type: int, name: str | None = None):
        mytype = DAEMON_MYTYPE.get(DaemonType(daemon_type))
        if mytype is None:
            raise ValueError(f"cannot locate daemons of type {DaemonType(daemon_type).name}")
        ads = self.store.select(mytype, None, time.time())
        if name is not None:
            wanted = name.lower()
            ads = [ad for ad in ads if text_of(ad, "Name").lower() == wanted
                   or (mytype == "Machine" and "@" not in name
                       and text_of(ad, "Machine").lower() == wanted)]
        ads.sort(key=lambda ad: (text_of(ad, "Name") != self.host, text_of(ad, "Name")))
        return [{k: v for k, v in ad.items() if k in LOCATE_PROJECTION} for ad in ads]

    def ads(self) -> list[dict]:
        ad = self.common_ad("Collector", f"My Pool - {self.host}")
        ad["CollectorIpAddr"] = ad["MyAddress"]
        ad["UpdateInterval"] = self.config_int("UPDATE_INTERVAL", 300)
        return [ad]

    def advertise(self, ads=None) -> None:
        self.store.update([adwire.exprs_of(ad) for ad in self.ads()], time.time(), 0)


def _invalidate_constraint(ad: dict) -> str | None:
    if "Requirements" in ad:
        return ad["Requirements"]
    if "Name" in ad:
        return f"Name == {ad['Name']}"
    return None


if __name__ == "__main__":
    main_for(Collector)
