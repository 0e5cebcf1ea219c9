"""The journal's ``userrec`` rows: the schedd folds its User and Project records from them
at start (``eventcore.projections.userrecs``).  They are few; the rest of the journal is
passed over in SQL."""

from __future__ import annotations

from typing import Iterator

from jobledger.eventcore.codecs.journal import decode_payload

__all__ = ["userrec_payloads"]


def userrec_payloads(store) -> Iterator[dict]:
    """The decoded payloads of every ``userrec`` row, in position order."""
    sql = "SELECT position, payload FROM journal WHERE type = 'userrec' ORDER BY position"
    for rows in store._chunks(sql, (), "reading the user records"):
        for position, payload in rows:
            yield decode_payload("userrec", payload, position)
