"""Job ads in queue and history rows: a compact text form, quick both ways.

A stored ad maps attribute names to ClassAd expression text.  In a row it is
written as ``name US expr US name US expr ...`` (US = the unit separator
``\\x1f``), which costs a join to write and a split to read -- several
times cheaper than JSON for the queue's hot path.  Expression text may hold
any character but a newline; an ad with a US anywhere falls back to JSON,
told apart by its first character ``{`` (no attribute name starts with one).
"""

from __future__ import annotations

import json
from itertools import chain
from typing import Mapping

__all__ = ["encode_ad", "decode_ad"]

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
