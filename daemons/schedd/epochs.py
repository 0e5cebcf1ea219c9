"""``Schedd.jobEpochHistory`` and ``condor_history -epochs``: a record per run attempt.

The records are folded from the journal (``eventcore.projections.epochs``, the
rows from ``daemons.storage.epochs``) each time they are asked for, and
answered as HTCondor's history helper answers an epoch query: newest first,
filtered by the constraint, stopping at ``since`` (exclusive) or after
``match`` records, each projected.  ``ad_type`` picks record types by
``EpochAdType`` (a name or a comma-separated list, any case): the journal gives
``EPOCH`` records only (HTCondor's shadow also writes INPUT/OUTPUT/CHECKPOINT
transfer and SPAWN records; those are never produced here).
"""

from __future__ import annotations

from jobledger.eventcore import adwire
from jobledger.daemons import ipc
from jobledger.daemons.schedd.query import BATCH, check_constraint
from jobledger.daemons.storage.epochs import rows_of_runs
from jobledger.eventcore.journal import entries_of_rows
from jobledger.eventcore.projections.epochs import epoch_ads

__all__ = ["epoch_history", "epoch_records"]


def _types(ad_type) -> set[str] | None:
    if ad_type is None or ad_type == "":
        return None
    names = ad_type if isinstance(ad_type, list) else str(ad_type).split(",")
    return {str(name).strip().upper() for name in names if str(name).strip()} or None


def _stop(since):
    """``since`` as a test ending the scan: a cluster id, "C.P", or an expression."""
    if since is None or since == "":
        return None
    if isinstance(since, int) and not isinstance(since, bool):
        return lambda ad: ad.get("ClusterId") == str(since)
    text = str(since).strip()
    parts = text.split(".")
    if len(parts) == 2 and all(p.isdigit() for p in parts):
        return lambda ad: (ad.get("ClusterId"), ad.get("ProcId")) == (str(int(parts[0])), str(int(parts[1])))
    if text.isdigit():
        return lambda ad: ad.get("ClusterId") == str(int(text))
    check_constraint(text)
    return lambda ad: adwire.matches(text, ad)


def epoch_records(store, constraint=None, projection=None, match: int = -1, since=None,
                  ad_type=None) -> list[dict]:
    """The epoch records, newest first, as the query asks (see the module docstring)."""
    check_constraint(constraint)
    stop, types = _stop(since), _types(ad_type)
    wanted = {name.lower() for name in projection or []}
    records = [ad for _, ad in epoch_ads(entries_of_rows(rows_of_runs(store)))]
    out: list[dict] = []
    for ad in reversed(records):
        if match >= 0 and len(out) >= match:
            break
        if stop is not None and stop(ad):
            break
        if types is not None and "EPOCH" not in types:
            break
        if constraint and not adwire.matches(constraint, ad):
            continue
        out.append({k: v for k, v in ad.items() if k.lower() in wanted} if wanted else ad)
    return out


def epoch_history(store, constraint=None, projection=None, match: int = -1, since=None,
                  ad_type=None) -> ipc.Streamed:
    """``epoch_records`` in batches (the schedd's ``epoch_history`` command)."""
    ads = epoch_records(store, constraint or None, projection, match, since, ad_type)
    return ipc.Streamed(ads[i:i + BATCH] for i in range(0, len(ads), BATCH))
