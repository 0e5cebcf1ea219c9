"""Job ads in queue and history rows: a compact text form, quick both ways.

A stored ad maps attribute names to ClassAd expression text.  In a row it is
written as ``name US expr US name US expr ...`` (US = the unit separator
``\\x1f``), which costs a join to write and a split to read -- several
times cheaper than JSON for the queue's hot path.  Expression text may hold
any character but a newline; an ad with a US anywhere falls back to JSON,
told apart by its first character ``{`` (no attribute name starts with one).

``JobAd`` reads a queue row's ad (the proc's attributes over its cluster's)
without merging or lower-casing it first.
"""

from __future__ import annotations

import json
from itertools import chain
from typing import Mapping

from jobledger.eventcore.adwire import lower_names

__all__ = ["encode_ad", "decode_ad", "lowered", "JobAd"]

US = "\x1f"


def encode_ad(ad: Mapping[str, str]) -> str:
    """One spelling per ad: names in sorted order (a rebuild writes the same text)."""
    text = US.join(chain.from_iterable(sorted(ad.items())))
    if text.count(US) != 2 * len(ad) - 1 and ad:
        return json.dumps(dict(ad), ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return text


def decode_ad(text: str) -> dict:
    if not text:
        return {}
    if text[0] == "{":
        return json.loads(text)
    parts = iter(text.split(US))
    return dict(zip(parts, parts))


lowered = lower_names   # (Lower-case name -> name, shared by ads with the same names:
                        # lower-casing every name of every ad was a fifth of a scan's time)


class JobAd(Mapping):
    """A queued job's ad: its own attributes over its cluster's, merged only when
    asked (``merged()``: what ``merged_ad`` gives).  ``lookup(lower_name)`` finds
    an attribute whatever its case, as ClassAds do, without lower-casing the ad;
    a scan reads through it only the attributes its constraint and projection
    name."""

    __slots__ = ("proc", "cluster", "_cluster_lower")

    def __init__(self, proc: dict, cluster: dict | None = None,
                 cluster_lower: dict | None = None):
        self.proc = proc
        self.cluster = cluster or None
        self._cluster_lower = cluster_lower if cluster_lower is not None or not cluster \
            else lowered(cluster)

    def __getitem__(self, name: str) -> str:
        text = self.proc.get(name)
        if text is not None:
            return text
        if self.cluster is None:
            raise KeyError(name)
        return self.cluster[name]

    def get(self, name: str, default=None):
        text = self.proc.get(name)
        if text is None and self.cluster is not None:
            text = self.cluster.get(name)
        return default if text is None else text

    def __contains__(self, name) -> bool:
        return name in self.proc or (self.cluster is not None and name in self.cluster)

    def __iter__(self):
        return iter(self.merged())

    def __len__(self) -> int:
        return len(self.merged())

    def merged(self) -> dict:
        if self.cluster is None:
            return dict(self.proc)
        ad = dict(self.cluster)
        ad.update(self.proc)
        return ad

    def lookup(self, lower_name: str) -> tuple[str, str] | None:
        """(name as the ad spells it, expression text) of an attribute named
        ``lower_name`` in any case; None if the ad has none."""
        name = lowered(self.proc).get(lower_name)
        if name is not None:
            return name, self.proc[name]
        if self.cluster is not None:
            name = self._cluster_lower.get(lower_name)
            if name is not None:
                return name, self.cluster[name]
        return None

    def project(self, wanted: list[str]) -> dict:
        """The attributes named in ``wanted`` (any case) the ad has, as it spells
        them; every attribute when ``wanted`` is empty."""
        if not wanted:
            return self.merged()
        out = {}
        for name in wanted:
            found = self.lookup(name.lower())
            if found is not None:
                out[found[0]] = found[1]
        return out
