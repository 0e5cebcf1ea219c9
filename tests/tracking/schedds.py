"""A schedd for the poll tracker built on a real journal's queue and history.

``StoreSchedd`` answers ``query``/``history`` from ``daemons.storage.store.Store``
(the queue projection of the journal), turning expression text into Python
values as the bindings would, adding ``ServerTime``, and grouping for
``QueryOpt.GroupBy`` (schedd.md 6.1: one ad per distinct projection tuple,
with ``JobCount``).  The jobs' states come from the journal, not from the
tracker's fold, so the poll tracker is checked against independent data.
"""

from __future__ import annotations

import time

from jobledger.daemons.storage.store import Store

GROUP_BY = 2


def value(text: str):
    if text is None:
        return None
    if text in ("true", "false"):
        return text == "true"
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1].replace('\\"', '"')
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


class StoreSchedd:
    def __init__(self, store: Store):
        self.store = store
        self.calls: list[tuple] = []

    def query(self, constraint="true", projection=(), callback=None, limit=-1, opts=0):
        self.calls.append(("query", constraint, opts))
        text = None if str(constraint).strip().lower() == "true" else str(constraint)
        ads = [{k: value(v) for k, v in ad.items()} for ad in self.store.query(text, projection, limit)]
        if opts & GROUP_BY:
            groups: dict[tuple, dict] = {}
            for ad in ads:
                key = tuple(ad.get(a) for a in projection)
                g = groups.setdefault(key, {**dict(zip(projection, key)), "JobCount": 0})
                g["JobCount"] += 1
            ads = list(groups.values())
        for ad in ads:
            ad["ServerTime"] = int(time.time())
        return ads

    def history(self, constraint=None, projection=(), match=-1, since=None):
        """Newest first; ``since`` "C.P" ends the scan at that job's record (schedd.md 6.3)."""
        self.calls.append(("history", constraint, since))
        out = []
        stop = None if since is None else tuple(int(x) for x in str(since).split("."))
        for ad in self.store.history(None, None, -1):
            if stop is not None and (value(ad["ClusterId"]), value(ad["ProcId"])) == stop:
                break
            if constraint is None or _matches(constraint, ad):
                out.append({k: value(v) for k, v in ad.items() if not projection or k in projection})
            if 0 <= match <= len(out):
                break
        return out


def _matches(constraint: str, ad: dict) -> bool:
    """Only the ``ClusterId == N`` constraints the poll tracker sends to history()."""
    name, _, number = constraint.partition("==")
    if name.strip() != "ClusterId":
        raise ValueError(f"test schedd cannot evaluate {constraint!r}")
    return value(ad.get("ClusterId")) == int(number)
