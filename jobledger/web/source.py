"""What ``jobledger web`` pictures: a pool's journal, live, read-only.

``Source(journal_path)`` follows one journal through read-only connections
(``daemons.storage.reader``): ``live`` is the ``Picture`` at the head,
``catch_up()`` folds what was appended since, ``at(position | as_of)`` is
the picture at a cut (the last cut is kept, so a slider dragged forward
folds only the difference), ``story(cluster, proc, position)`` is the job
drawer, ``dag(cluster)`` the graph of a DAGMan job's DAG file (read from
its ``Iwd``, never written).  Every method may be called from any thread:
the live fold has its lock, each other read its own connection.

``imported(logs, directory)`` makes a journal of HTCondor user logs (the
importer's, idempotent) so a run HTCondor made can be pictured the same way.
"""

from __future__ import annotations

import datetime
import os
import threading
from pathlib import Path

from jobledger.daemons.storage.reader import Reader
from jobledger.eventcore.dagman.parse import parse_dag
from jobledger.eventcore.errors import JobledgerError
from jobledger.eventcore.journal import entries_of_rows
from jobledger.eventcore.projections.picture import Picture, picture
from jobledger.eventcore.projections.replay import effective_time
from jobledger.eventcore.projections.story import job_story

__all__ = ["Source", "imported", "MAX_DAG_BYTES"]

MAX_DAG_BYTES = 16 << 20      # a DAG file (or one it includes) past this is not read


class Source:
    """A journal followed read-only (see the module docstring)."""

    def __init__(self, journal: str | os.PathLike, tz: datetime.tzinfo | None = None):
        self.path = Path(journal)
        if not self.path.exists():
            raise JobledgerError(f"no journal at {self.path}")
        self.tz = tz or datetime.timezone.utc
        self._reader = Reader(self.path)
        self._lock = threading.Lock()
        self._cut_lock = threading.Lock()
        self.live = Picture()
        self._cut: Picture | None = None
        self._dags: dict[int, dict] = {}
        self.catch_up()

    def close(self) -> None:
        self._reader.close()

    def _reading(self) -> Reader:
        return Reader(self.path)

    # ------------------------------------------------------------- live --
    def head(self) -> int:
        with self._lock:
            return self._reader.head()[0]

    def catch_up(self) -> int:
        """Fold what was appended since the last call; the live position."""
        with self._lock:
            rows = self._reader.rows_spanning(self.live.position, 1 << 30) \
                if self._reader.exists() else []
            for entry in entries_of_rows(rows, after=self.live.position):
                self.live.apply(entry)
            self.live.queue.take_changes()
            return self.live.position

    def snapshot(self) -> dict:
        with self._lock:
            return self.live.snapshot()

    def delta(self, since: int) -> tuple[int, dict]:
        with self._lock:
            return self.live.position, self.live.delta(since)

    # ----------------------------------------------------------- replay --
    def at(self, position: int | None = None, as_of: float | None = None) -> dict:
        """The picture at a cut (``position`` past the head: the head)."""
        with self._lock:
            live_at = self.live.position
            if as_of is None and (position is None or position >= live_at):
                return self.live.snapshot()
        reader = self._reading()
        try:
            if as_of is not None:
                return picture(entries_of_rows(reader.iter_rows(0)), as_of=as_of).snapshot()
            with self._cut_lock:
                cut = self._cut
                if cut is None or cut.position > position:
                    cut = Picture()
                for entry in entries_of_rows(reader.iter_rows(cut.position), after=cut.position):
                    if entry.position > position:
                        break
                    cut.apply(entry)
                cut.queue.take_changes()
                cut.position = position
                self._cut = cut
                return cut.snapshot()
        finally:
            reader.close()

    def moment_of(self, position: int) -> float | None:
        """When the entry at ``position`` happened (event time)."""
        reader = self._reading()
        try:
            for entry in entries_of_rows(reader.rows_spanning(max(position - 1, 0), 1),
                                         after=max(position - 1, 0)):
                return effective_time(entry)
            return None
        finally:
            reader.close()

    # ----------------------------------------------------------- drawer --
    def story(self, cluster: int, proc: int, position: int | None = None) -> dict | None:
        reader = self._reading()
        try:
            return job_story(entries_of_rows(reader.iter_rows(0)), cluster, proc, position, self.tz)
        finally:
            reader.close()

    # -------------------------------------------------------------- DAG --
    def dag(self, cluster: int) -> dict | None:
        """The DAG file of DAGMan job ``cluster``: nodes, edges, scripts, retries."""
        with self._lock:
            where = self.live.dags.get(cluster)
        if where is None:
            return None
        cached = self._dags.get(cluster)
        if cached is not None:
            return cached
        graph = dag_graph(where.get("iwd") or ".", where["dag"])
        if "error" not in graph:
            self._dags[cluster] = graph
        return graph


def _read_bounded(path: str) -> bytes:
    with open(path, "rb") as handle:
        data = handle.read(MAX_DAG_BYTES + 1)
    if len(data) > MAX_DAG_BYTES:
        raise JobledgerError(f"{path}: larger than {MAX_DAG_BYTES} bytes, not read")
    return data


def dag_graph(iwd: str, name: str) -> dict:
    """Nodes and edges of the DAG file ``name`` (relative to ``iwd``), or ``{"error": ...}``."""
    try:
        dag = parse_dag(name, lambda path: _read_bounded(os.path.join(iwd, path)))
    except (JobledgerError, OSError, UnicodeDecodeError) as exc:
        return {"error": f"{os.path.join(iwd, name)}: {exc}", "nodes": {}}
    nodes = {}
    for node in dag.nodes.values():
        nodes[node.name] = {"kind": node.kind, "parents": list(node.parents), "children": list(node.children),
                            "retry": node.retry, "scripts": sorted(node.scripts), "noop": node.noop,
                            "subdag": node.kind == "SUBDAG"}
    return {"file": os.path.join(iwd, name), "nodes": nodes}


def imported(logs: list[str], directory: str | os.PathLike, progress=None) -> tuple[Path, list[str]]:
    """A journal in ``directory`` holding the events of ``logs`` (HTCondor user logs or
    event logs, text, JSON or XML); (its path, warnings)."""
    from jobledger.daemons.client.importer import import_log, reader_state
    from jobledger.daemons.storage.store import DB_NAME, Store

    store = Store(str(directory))
    warnings = []
    try:
        for path in logs:
            result = import_log(store, path, reader_state())
            warnings += [f"{path} at byte {offset}: not an event ({reason})" for offset, reason in result.garbled]
            if progress is not None:
                progress(path)
    finally:
        store.close()
    return Path(directory) / DB_NAME, warnings
