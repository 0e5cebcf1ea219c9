"""``jobledger journal sql``: the user's own read-only SQL on a journal.

``query(path, sql) -> (columns, rows)`` runs one statement on a read-only
connection (``mode=ro`` and ``PRAGMA query_only``) through sqlite-utils.
Statements that would change anything (INSERT, UPDATE, DELETE, CREATE, DROP,
ALTER, ATTACH, a writing PRAGMA, ...) are refused before they run by an
authorizer, with a ``JournalError`` saying so; any other SQL error is a
``JournalError`` with SQLite's one-line reason.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import sqlite_utils

from jobledger.daemons.storage.errors import translate
from jobledger.daemons.storage.schema import check_readable
from jobledger.eventcore.errors import JournalError

__all__ = ["query", "ReadOnlyRefused"]

_WRITES = {
    getattr(sqlite3, name) for name in (
        "SQLITE_INSERT", "SQLITE_UPDATE", "SQLITE_DELETE", "SQLITE_CREATE_INDEX",
        "SQLITE_CREATE_TABLE", "SQLITE_CREATE_TEMP_INDEX", "SQLITE_CREATE_TEMP_TABLE",
        "SQLITE_CREATE_TEMP_TRIGGER", "SQLITE_CREATE_TEMP_VIEW", "SQLITE_CREATE_TRIGGER",
        "SQLITE_CREATE_VIEW", "SQLITE_CREATE_VTABLE", "SQLITE_DROP_INDEX", "SQLITE_DROP_TABLE",
        "SQLITE_DROP_TEMP_INDEX", "SQLITE_DROP_TEMP_TABLE", "SQLITE_DROP_TEMP_TRIGGER",
        "SQLITE_DROP_TEMP_VIEW", "SQLITE_DROP_TRIGGER", "SQLITE_DROP_VIEW", "SQLITE_DROP_VTABLE",
        "SQLITE_ALTER_TABLE", "SQLITE_ATTACH", "SQLITE_DETACH", "SQLITE_REINDEX",
        "SQLITE_ANALYZE", "SQLITE_TRANSACTION", "SQLITE_SAVEPOINT")
    if hasattr(sqlite3, name)}


# pragmas that take an argument and still only read
_READING_PRAGMAS = {"table_info", "table_xinfo", "table_list", "index_list", "index_info",
                    "index_xinfo", "foreign_key_list", "quick_check", "integrity_check"}


def _check_text(sql: str) -> None:
    """SQLite takes UTF-8: bytes that are not (an argument's, which Python keeps as lone
    surrogates) are a JournalError naming the first of them, not an encoding traceback."""
    try:
        sql.encode("utf-8")
    except UnicodeEncodeError as exc:
        char = ord(sql[exc.start])
        what = f"byte 0x{char - 0xDC00:02x}" if 0xDC80 <= char <= 0xDCFF else f"character U+{char:04X}"
        raise JournalError(f"the statement is not UTF-8 text: {what} at character {exc.start + 1}") \
            from None


class ReadOnlyRefused(JournalError):
    """A statement that would change the journal (this command only reads)."""


def query(path, sql: str) -> tuple[list[str], list[tuple]]:
    """Run ``sql`` read-only on the journal at ``path``: (column names, rows)."""
    path = Path(path)
    if not path.exists():
        raise JournalError(f"no journal at {path}")
    _check_text(sql)
    refused: list[str] = []

    def authorize(action, arg1, arg2, db, trigger):
        if action in _WRITES or (action == sqlite3.SQLITE_PRAGMA and arg2 is not None
                                 and (arg1 or "").lower() not in _READING_PRAGMAS):
            refused.append(arg1 or "")
            return sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_OK

    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)
    except sqlite3.Error as exc:
        raise translate(exc, "opening the journal", path) from None
    try:
        try:
            check_readable(conn, path)
        except sqlite3.Error as exc:
            raise translate(exc, "reading the journal", path) from None
        conn.execute("PRAGMA query_only=ON")
        conn.set_authorizer(authorize)
        db = sqlite_utils.Database(conn, execute_plugins=False, recursive_triggers=False)
        try:
            cursor = db.execute(sql)
            rows = cursor.fetchall()
        except (sqlite3.Error, sqlite3.Warning) as exc:
            if refused:
                verb = sql.split()[0].upper()
                raise ReadOnlyRefused(f"refused: `jobledger journal sql` only reads, and this "
                                      f"{verb} statement would change the journal") from None
            raise JournalError(f"SQL error: {exc}") from None
        columns = [d[0] for d in cursor.description or ()]
        return columns, rows
    finally:
        conn.close()
