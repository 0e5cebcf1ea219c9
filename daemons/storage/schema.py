"""The schema of ``journal.sqlite``, its version, and the migrations between versions.

The tables are created by ``schemas/store.sql`` (``create_tables``); the
version is the ``schema`` row of ``meta``.  Opening for writing upgrades an
older journal in place, one migration per version, each in its own
transaction (``MIGRATIONS``, written with sqlite-utils); a journal of a
newer version than this code knows, or with a version that is not a number,
is refused with a ``JournalError`` that names it, never read as if it were
ours.  A read-only open (``check_readable``) refuses the same, and reads an
older version as it is (each migration so far only adds: columns that are
absent read as NULL, see ``journal_columns``).

Versions:

1. the journal, queue, history and log-writer tables (``event`` may be
   missing in journals from before it existed);
2. the ``event`` column in every journal (readers may rely on it);
3. the journal may hold ``procs`` rows (a block of new procs with their
   SUBMIT events, two positions a proc, stored at the last of them:
   ``eventcore.codecs.journal``).  Nothing to convert: older rows read as
   they are; the version keeps a jobledger that cannot read blocks from
   opening such a journal.

An index on ``journal(cluster)`` was tried for version 2 and left out: it
cost appends of one record 10-15 % of their CPU (one more B-tree page per
commit) for reads that are rare (bench/RESULTS.md, storage).
"""

from __future__ import annotations

import os
import sqlite3
from importlib import resources
from pathlib import Path

import sqlite_utils

from jobledger.eventcore.errors import JournalError
from jobledger.daemons.storage.errors import guard, translate

__all__ = ["DB_NAME", "SCHEMA_VERSION", "JOURNAL_COLUMNS", "connect", "create_tables",
           "migrate", "check_readable", "schema_version", "journal_columns", "create_private"]

DB_NAME = "journal.sqlite"
SCHEMA_VERSION = 3
# the journal table's columns, in order (eventcore.codecs.journal.Row's fields)
JOURNAL_COLUMNS = ("position", "time", "cluster", "proc", "type", "payload", "key", "checksum",
                   "event")


def ddl() -> str:
    return resources.files("jobledger.schemas").joinpath("store.sql").read_text("utf-8")


def create_private(path: Path) -> None:
    """The database file, mode 0600 (SQLite gives its -wal and -shm the same mode)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if os.fstat(fd).st_mode & 0o077:
            os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
    for suffix in ("-wal", "-shm"):
        try:
            os.chmod(f"{path}{suffix}", 0o600)
        except FileNotFoundError:
            pass


def connect(path, synchronous: str = "FULL") -> sqlite3.Connection:
    """A writing connection in WAL mode (autocommit: transactions are explicit), on a
    journal whose version this code knows (checked before anything is written)."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30)
    try:
        check_readable(conn, path)
    except BaseException:
        conn.close()
        raise
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={synchronous}")
    conn.execute("PRAGMA foreign_keys=OFF")
    conn.execute("PRAGMA cache_size=-65536")
    return conn


def create_tables(conn: sqlite3.Connection) -> None:
    """Every table and index that is missing (a dropped projection comes back empty)."""
    conn.executescript(ddl())


def schema_version(conn: sqlite3.Connection, path) -> int | None:
    """The journal's schema version (None: a new, empty database)."""
    tables = {name for (name,) in conn.execute(
        "SELECT name FROM sqlite_master WHERE type='table'")}
    if "journal" not in tables:
        return None
    row = conn.execute("SELECT value FROM meta WHERE name='schema'").fetchone() \
        if "meta" in tables else None
    if row is None:
        return 1                       # the first journals wrote no version
    try:
        return int(row[0])
    except (TypeError, ValueError):
        raise JournalError(f"{path}: schema version {row[0]!r} is not a number: "
                           "not a journal this jobledger can read") from None


def _db(conn: sqlite3.Connection) -> sqlite_utils.Database:
    return sqlite_utils.Database(conn, execute_plugins=False)


def _refuse_newer(version: int, path) -> None:
    if version > SCHEMA_VERSION:
        raise JournalError(f"{path} has schema version {version}, newer than this jobledger "
                           f"reads (up to {SCHEMA_VERSION}): open it with the jobledger that "
                           "wrote it, or a newer one")
    if version < 1:
        raise JournalError(f"{path} has schema version {version}: not a journal this "
                           "jobledger can read")


def _to_2(db: sqlite_utils.Database) -> None:
    if "event" not in db["journal"].columns_dict:
        db["journal"].add_column("event", int)


def _to_3(db: sqlite_utils.Database) -> None:
    """Blocks of procs are new rows only: the tables stay as they are."""


MIGRATIONS = {1: _to_2, 2: _to_3}        # version -> the step to version + 1


def migrate(conn: sqlite3.Connection, path) -> int:
    """Create or upgrade the schema in place; return the version found (0: new)."""
    with guard("opening the journal", path):
        version = schema_version(conn, path)
        if version is not None:
            _refuse_newer(version, path)
        db = _db(conn)
        if version is None:             # every statement is IF NOT EXISTS: a race is harmless
            create_tables(conn)
            conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
            return 0
        for step in range(version, SCHEMA_VERSION):
            conn.execute("BEGIN IMMEDIATE")
            try:
                MIGRATIONS[step](db)
                conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (str(step + 1),))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        create_tables(conn)             # projections dropped by hand come back (rebuilt)
        return version


def check_readable(conn: sqlite3.Connection, path) -> int | None:
    """Refuse a journal this code cannot read; return its version (None: no journal yet)."""
    try:
        version = schema_version(conn, path)
    except sqlite3.Error as exc:
        raise translate(exc, "reading the journal", path) from None
    if version is not None:
        _refuse_newer(version, path)
    return version


def journal_columns(conn: sqlite3.Connection) -> str:
    """The select list of ``JOURNAL_COLUMNS`` (an absent ``event`` column reads as NULL)."""
    have = {row[1] for row in conn.execute("PRAGMA table_info(journal)")}
    return ", ".join(c if c in have else f"NULL AS {c}" for c in JOURNAL_COLUMNS)
