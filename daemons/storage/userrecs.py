"""The journal's ``userrec`` rows: the schedd folds its User and Project records from them
at start (``eventcore.projections.userrecs``).  They are few; the rest of the journal is
passed over in SQL."""

from __future__ import annotations

import sqlite3
from typing import Iterator

from jobledger.eventcore.codecs.journal import decode_payload
from jobledger.daemons.storage.errors import translate

__all__ = ["userrec_payloads"]


def userrec_payloads(store) -> Iterator[dict]:
    """The decoded payloads of every ``userrec`` row, in position order."""
    conn = store._scanner()
    try:
        try:
            cursor = conn.execute("SELECT position, payload FROM journal WHERE type = 'userrec' "
                                  "ORDER BY position")
            try:
                rows = cursor.fetchmany(500)
                while rows:
                    for position, payload in rows:
                        yield decode_payload("userrec", payload, position)
                    rows = cursor.fetchmany(500)
            finally:
                cursor.close()
        except sqlite3.Error as exc:
            raise translate(exc, "reading the user records", store.path) from None
    finally:
        store._scanner(done=conn)
