"""The one mapping of sqlite3 errors to the project's error tree (eventcore.errors).

Every SQL statement on ``journal.sqlite`` runs in this package, and every
``sqlite3.Error`` it meets leaves it through ``translate``:

=============================================  ==========================
sqlite3 error                                   raised as
=============================================  ==========================
``IntegrityError`` (a duplicate key or position)  ``JournalError`` ("refused")
``DatabaseError`` "not a database", "malformed",   ``JournalCorrupt`` (path)
"disk image", "file is encrypted"
anything else (locked, read-only, I/O, full)       ``JournalError`` (path)
=============================================  ==========================

``guard(what, path)`` is the same as a context manager.
"""

from __future__ import annotations

import contextlib
import sqlite3

from jobledger.eventcore.errors import JournalCorrupt, JournalError

__all__ = ["translate", "guard", "is_damage"]

_DAMAGE = ("not a database", "malformed", "disk image", "file is encrypted")


def is_damage(exc: sqlite3.Error) -> bool:
    """The file itself is damaged (as opposed to locked, full, read-only, refused)."""
    return isinstance(exc, sqlite3.DatabaseError) and any(
        word in str(exc).lower() for word in _DAMAGE)


def translate(exc: sqlite3.Error, what: str, path=None) -> JournalError:
    """``exc`` as the project's error, ``what`` saying what was being done."""
    where = {} if path is None else {"path": str(path)}
    if isinstance(exc, sqlite3.IntegrityError):
        return JournalError(f"{what} refused: {exc}")
    if is_damage(exc):
        return JournalCorrupt(f"the database file cannot be read: {exc} ({what})", **where)
    suffix = f" ({path})" if path is not None else ""
    return JournalError(f"{what} failed: {exc.__class__.__name__}: {exc}{suffix}")


@contextlib.contextmanager
def guard(what: str, path=None):
    """Run a block of SQL; a ``sqlite3.Error`` leaves it translated."""
    try:
        yield
    except sqlite3.Error as exc:
        raise translate(exc, what, path) from None
