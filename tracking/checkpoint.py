"""A tracker's checkpoint: job states, read positions and memo, saved together.

One SQLite file per tracker.  ``save()`` writes the states that changed, the
positions the tracker has read up to, new memo entries and the anomaly
counters in ONE transaction (``synchronous=FULL``), so a tracker killed at
any moment restarts from a consistent point: the events after the saved
positions are read again, folded onto the saved states, and each status
change is delivered once more only if its delivery was not saved.

The memo is where a callback records what it did, durably and exactly once
(the transactional-outbox idea): an entry appended during a step is saved
in the same transaction as the positions that produced it.

A checkpoint that cannot be used (not SQLite, damaged, another schema, another
kind of tracker or other sources) is moved aside as ``<name>.bad`` and the
tracker replays from the start: a bad checkpoint costs time, never a stall.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from jobledger.eventcore.projections.jobstate import JobState, state_from_dict, state_to_dict

__all__ = ["Checkpoint", "Saved"]

SCHEMA_VERSION = 1
_DDL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (cluster INTEGER, proc INTEGER, state TEXT NOT NULL,
                                 PRIMARY KEY (cluster, proc)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS positions (source TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS memo (seq INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""


@attrs.frozen
class Saved:
    """What a checkpoint held when it was opened."""

    states: dict
    positions: dict[str, Any]
    memo: list
    counters: dict[str, int]


class Checkpoint:
    """The checkpoint file of one tracker (``kind`` names the tracker and its sources)."""

    def __init__(self, path: str | os.PathLike, kind: str):
        self.path = Path(path)
        self.kind = kind
        self.discarded: str | None = None   # why an unusable checkpoint was set aside
        self._db: sqlite3.Connection | None = None
        self._memo_saved = 0

    def open(self) -> Saved:
        """Open (or create) the file and return what it holds; empty if unusable."""
        try:
            return self._load()
        except (sqlite3.DatabaseError, ValueError, KeyError, TypeError) as exc:
            self._set_aside(f"{type(exc).__name__}: {exc}")
        return self._load()

    def _load(self) -> Saved:
        db = self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        check = db.execute("PRAGMA quick_check").fetchone()[0]
        if check != "ok":
            raise ValueError(f"integrity check failed: {check}")
        db.executescript(_DDL)
        meta = dict(db.execute("SELECT key, value FROM meta"))
        if not meta:
            with db:
                db.execute("BEGIN IMMEDIATE")
                db.executemany("INSERT INTO meta VALUES (?, ?)",
                               [("version", str(SCHEMA_VERSION)), ("kind", self.kind)])
            meta = {"version": str(SCHEMA_VERSION), "kind": self.kind}
        if meta.get("version") != str(SCHEMA_VERSION):
            raise ValueError(f"checkpoint schema {meta.get('version')}, expected {SCHEMA_VERSION}")
        if meta.get("kind") != self.kind:
            raise ValueError(f"checkpoint of {meta.get('kind')!r}, not {self.kind!r}")
        states = {}
        for (text,) in db.execute("SELECT state FROM jobs"):
            state = state_from_dict(json.loads(text))
            states[state.job] = state
        positions = {k: json.loads(v) for k, v in db.execute("SELECT source, value FROM positions")}
        memo = [json.loads(v) for (v,) in db.execute("SELECT value FROM memo ORDER BY seq")]
        counters = dict(db.execute("SELECT name, value FROM counters"))
        self._memo_saved = len(memo)
        return Saved(states, positions, memo, counters)

    def _set_aside(self, reason: str) -> None:
        self.close()
        self.discarded = reason
        for suffix in ("-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        if self.path.exists():
            os.replace(self.path, self.path.with_name(self.path.name + ".bad"))

    def reset(self, reason: str) -> None:
        """Forget everything (the sources changed under the tracker): full replay."""
        self._set_aside(reason)
        self._load()

    def save(self, states: Iterable[JobState], positions: Mapping[str, Any], memo: list,
             counters: Mapping[str, int]) -> None:
        """Commit changed ``states``, all ``positions``, the unsaved tail of ``memo``."""
        db = self._db
        if db is None:
            raise RuntimeError("checkpoint is not open")
        new_memo = memo[self._memo_saved:]
        with db:
            db.execute("BEGIN IMMEDIATE")
            db.executemany(
                "INSERT OR REPLACE INTO jobs VALUES (?, ?, ?)",
                [(s.job.cluster, s.job.proc, json.dumps(state_to_dict(s))) for s in states])
            db.executemany("INSERT OR REPLACE INTO positions VALUES (?, ?)",
                           [(k, json.dumps(v)) for k, v in positions.items()])
            db.executemany("INSERT INTO memo VALUES (?, ?)",
                           [(self._memo_saved + i, json.dumps(v)) for i, v in enumerate(new_memo)])
            db.executemany("INSERT OR REPLACE INTO counters VALUES (?, ?)", list(counters.items()))
        self._memo_saved = len(memo)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
