"""The client's half of a late-materialization submit (a job factory).

condor_submit (and ``Schedd.submit``) make a job factory when the description sets
``max_materialize``, ``max_idle`` or ``materialize_max_idle`` (HTCondor's
``want_factory_submit``), or when ``condor_submit -factory`` asks for one.  The
request sent with the cluster carries what HTCondor's condor_submit sends the schedd
for it: the submit digest (``eventcore.submit.digest``, ``FACTORY.Iwd`` the submit
directory) and the item rows, which the schedd keeps in its spool.
"""

from __future__ import annotations

import os

from jobledger.eventcore.submit.digest import items_text, make_digest, wants_factory

__all__ = ["factory_request", "is_factory", "item_rows"]


def is_factory(description) -> bool:
    """Whether submitting ``description`` makes a job factory."""
    if bool(getattr(description, "as_factory", False)):
        return True
    lookup = getattr(description, "lookup", None)
    return lookup is not None and wants_factory(lookup)


def item_rows(description, queue: str | None, itemdata) -> tuple[tuple[str, ...], list[list[str]] | None]:
    """(the queue statement's variables, its rows as lists of values, or None without
    items); ``itemdata`` (a list) when the caller gave the rows."""
    spec, _ = description.queue_spec(queue)
    names = tuple(spec.variables) or (("Item",) if spec.mode else ())
    if itemdata is not None:
        rows = [list(row.values()) if isinstance(row, dict) else [str(row)] for row in itemdata]
        if itemdata and isinstance(itemdata[0], dict) and not spec.variables:
            names = tuple(itemdata[0])
        return names, rows
    found = description.itemdata(queue)
    if found is None:
        return names, None
    return names, [[row.get(name, "") for name in names] if isinstance(row, dict) else [str(row)]
                   for row in found]


def factory_request(description, cluster: int, queue: str | None, itemdata,
                    cwd: str | None = None) -> dict | None:
    """What the schedd is sent for a job factory (None: not one): ``digest`` (its text
    before the queue statement), ``count`` and ``variables`` (the queue statement's, which
    the schedd completes with its items file) and ``items`` (the rows' text, or None)."""
    if not is_factory(description):
        return None
    names, rows = item_rows(description, queue, itemdata)
    spec, _ = description.queue_spec(queue)
    commands = [(name, description[name]) for name in description]
    digest = make_digest(commands, names, cluster, cwd or os.getcwd(), description.lookup,
                         description.environment)
    return {"digest": digest, "count": max(spec.count, 1), "variables": list(names),
            "items": items_text(rows) if rows is not None else None}
