"""The pool's journal and queue: ``daemons.storage.store`` (kept importable here)."""

from jobledger.daemons.storage.store import DB_NAME, DURABILITY, Store, default_constraint_filter

__all__ = ["Store", "DURABILITY", "DB_NAME", "default_constraint_filter"]
