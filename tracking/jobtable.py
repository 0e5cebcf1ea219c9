"""The trackers' job table: ``{JobId: JobState}``, finished jobs packed.

A tracker promises every job's state, finished ones included (``all_done``
counts them, ``jobledger watch`` prints them), so nothing is dropped; but a
finished job's state no longer changes, so it need not stay a Python object
graph (a ``JobState``, its ``JobId`` key, a dozen int objects: ~900 bytes).
``JobTable`` keeps the jobs that are not finished as ``JobState`` objects and
packs each finished one into one row of 32-bit ints in its cluster's array
(~90 bytes; times relative to the table's first), the way the schedd moves a finished job out of its queue into
its history.  Reading a packed job rebuilds an equal ``JobState``.

A state that does not fit the columns (a number beyond 32 bits, a time more
than 68 years from the first, a value of another type, a proc far beyond its
cluster's others) is kept as it is; the table stays exact either way.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping, MutableMapping

from eventcore.ids import JobId
from eventcore.projections.jobstate import JobState
from eventcore.status import JobStatus

__all__ = ["JobTable"]

# Columns of a packed row, all 32-bit ints: times as seconds from ``base``,
# strings (hosts, hold reasons) as their number in the table's list of texts.
_COLUMNS = ("status", "last_status", "entered_status", "submitted", "first_start", "last_start",
            "completed", "exit_code", "exit_signal", "exit_by_signal", "hold_reason", "hold_code",
            "hold_subcode", "starts", "holds", "evictions", "host", "seen_submit", "last_event",
            "last_event_time", "events")
_TIME = frozenset({"entered_status", "submitted", "first_start", "last_start", "completed",
                   "last_event_time"})
_TEXT = frozenset({"hold_reason", "host"})
_FLAG = frozenset({"exit_by_signal", "seen_submit"})
_NONE = -(2**31)
_W = len(_COLUMNS)
_STATUS, _EXIT_CODE, _BY_SIGNAL = (_COLUMNS.index(n) for n in ("status", "exit_code", "exit_by_signal"))
_COMPLETED = int(JobStatus.COMPLETED)
_STATUSES = {int(s): s for s in JobStatus}


class _Cluster:
    """The packed finished procs of one cluster: ``index[proc]`` is the proc's
    row in ``rows`` (-1: none); rows of procs unpacked again are reused."""

    __slots__ = ("index", "cells", "rows", "free")

    def __init__(self):
        self.index = array("i")
        self.cells = array("i")
        self.rows = 0
        self.free: list[int] = []

    def row(self, proc: int) -> int:
        index = self.index
        return index[proc] if 0 <= proc < len(index) else -1

    def fits(self, proc: int) -> bool:
        """Procs are dense in a cluster; a far-off one (its index would be mostly
        empty) stays unpacked."""
        return 0 <= proc < len(self.index) + 2 * self.rows + 1024

    def copy(self) -> "_Cluster":
        twin = _Cluster()
        twin.index, twin.cells = array("i", self.index), array("i", self.cells)
        twin.rows, twin.free = self.rows, list(self.free)
        return twin


_EMPTY = _Cluster()


class JobTable(MutableMapping):
    """``{JobId: JobState}`` with finished jobs packed (see the module docstring)."""

    def __init__(self, states: Mapping[JobId, JobState] | None = None):
        self._live: dict[JobId, JobState] = {}
        self._packed: dict[int, _Cluster] = {}
        self._npacked = 0
        self._texts: list[str] = []          # strings of packed rows (hosts, reasons), each once
        self._text_ids: dict[str, int] = {}
        self._base: int | None = None         # packed times are seconds from this one
        if states:
            self.update(states)

    # -- the mapping ---------------------------------------------------------------
    def __getitem__(self, job: JobId) -> JobState:
        state = self._live.get(job)
        if state is not None:
            return state
        row = self._row(job)
        if row is None:
            raise KeyError(job)
        return self._unpack(job, *row)

    def get(self, job, default=None):
        state = self._live.get(job)
        if state is not None:
            return state
        row = self._row(job)
        return default if row is None else self._unpack(job, *row)

    def __contains__(self, job) -> bool:
        return job in self._live or self._row(job) is not None

    def __setitem__(self, job: JobId, state: JobState) -> None:
        if state.done and self._pack(job, state):
            self._live.pop(job, None)
            return
        self._drop_packed(job)
        self._live[job] = state

    def __delitem__(self, job: JobId) -> None:
        if self._live.pop(job, None) is None and not self._drop_packed(job):
            raise KeyError(job)

    def __len__(self) -> int:
        return len(self._live) + self._npacked

    def __iter__(self) -> Iterator[JobId]:
        for job, _ in self._packed_rows(self._live):
            yield job

    def _packed_rows(self, live):
        """The live entries' keys (as ``(job, None)``), then each packed (job, (cluster, row))."""
        for job in list(live):
            yield job, None
        for cluster, packed in list(self._packed.items()):
            for proc, i in enumerate(array("i", packed.index)):
                if i >= 0:
                    yield JobId(cluster, proc), (packed, i)

    def items(self):
        """(job, state) pairs: the live jobs, then the packed ones by cluster."""
        return _Items(self)

    def copy(self) -> "JobTable":
        twin = JobTable()
        twin._live = dict(self._live)
        twin._packed = {cluster: packed.copy() for cluster, packed in self._packed.items()}
        twin._npacked = self._npacked
        twin._texts, twin._text_ids = self._texts, self._text_ids    # append-only: sharing is safe
        twin._base = self._base
        return twin

    @property
    def packed(self) -> int:
        """How many finished jobs are held packed."""
        return self._npacked

    def live(self, cluster: int | None = None) -> list[JobState]:
        """The states held as objects (every job not finished), of ``cluster`` if given."""
        if cluster is None:
            return list(self._live.values())
        return [s for j, s in self._live.items() if j.cluster == cluster]

    def brief(self):
        """``(cluster, proc, status, failed)`` of every job, packed ones without
        building their states (what per-batch counts need)."""
        for job, state in list(self._live.items()):
            failed = state.status == _COMPLETED and (bool(state.exit_by_signal) or bool(state.exit_code))
            yield job.cluster, job.proc, int(state.status), failed
        yield from self.outcomes()

    def outcomes(self, cluster: int | None = None):
        """``(cluster, proc, status, failed)`` of each packed (finished) job, without
        building its state: ``failed`` = completed with a non-zero exit code or a signal."""
        clusters = self._packed.items() if cluster is None else (
            [(cluster, self._packed[cluster])] if cluster in self._packed else [])
        for c, packed in list(clusters):
            cells = packed.cells
            for proc, i in enumerate(array("i", packed.index)):
                if i < 0:
                    continue
                base = i * _W
                status = cells[base + _STATUS]
                code, by_signal = cells[base + _EXIT_CODE], cells[base + _BY_SIGNAL]
                failed = status == _COMPLETED and (by_signal == 1 or code not in (0, _NONE))
                yield c, proc, status, failed

    # -- packing ---------------------------------------------------------------------
    def _row(self, job):
        if type(job) is not JobId:
            return None
        packed = self._packed.get(job.cluster)
        if packed is None:
            return None
        i = packed.row(job.proc)
        return None if i < 0 else (packed, i)

    def _text_id(self, text: str) -> int:
        i = self._text_ids.get(text)
        if i is None:
            i = self._text_ids[text] = len(self._texts)
            self._texts.append(text)
        return i

    def _pack(self, job: JobId, state: JobState) -> bool:
        """Store ``state`` as a row; False when it does not fit the columns exactly."""
        packed = self._packed.get(job.cluster)
        if not (packed or _EMPTY).fits(job.proc):
            return False
        if self._base is None:
            t = state.entered_status
            self._base = t if type(t) is int and abs(t) < 2**40 else 0
        try:
            row = array("i", [self._cell(n, getattr(state, n)) for n in _COLUMNS])
        except (TypeError, OverflowError):
            return False
        if packed is None:
            packed = self._packed[job.cluster] = _Cluster()
        i = packed.row(job.proc)
        if i < 0:
            if packed.free:
                i = packed.free.pop()
            else:
                i = packed.rows
                packed.rows += 1
                packed.cells.extend(row)
            if job.proc >= len(packed.index):
                packed.index.extend([-1] * (job.proc + 1 - len(packed.index)))
            packed.index[job.proc] = i
            self._npacked += 1
        packed.cells[i * _W:(i + 1) * _W] = row
        return True

    def _cell(self, name: str, v) -> int:
        """One column's int for value ``v`` (TypeError/OverflowError: it has none)."""
        if v is None:
            return _NONE
        if name in _TEXT:
            if type(v) is not str:
                raise TypeError("not a str")
            return self._text_id(v)
        if name in _FLAG:
            if type(v) is not bool:
                raise TypeError("not a bool")
            return int(v)
        if type(v) is not int and not isinstance(v, JobStatus):
            raise TypeError("not an int")
        v = int(v) - self._base if name in _TIME else int(v)
        if v == _NONE:
            raise OverflowError("the no-value mark")
        return v

    def _drop_packed(self, job) -> bool:
        row = self._row(job)
        if row is None:
            return False
        packed, i = row
        packed.index[job.proc] = -1
        packed.free.append(i)
        self._npacked -= 1
        if len(packed.free) == packed.rows:
            del self._packed[job.cluster]
        return True

    def _unpack(self, job: JobId, packed: _Cluster, i: int) -> JobState:
        fields = {}
        texts, base = self._texts, self._base
        for n, v in zip(_COLUMNS, packed.cells[i * _W:(i + 1) * _W]):
            if v == _NONE:
                fields[n] = None
            elif n in _TIME:
                fields[n] = v + base
            elif n in _TEXT:
                fields[n] = texts[v]
            elif n in _FLAG:
                fields[n] = bool(v)
            else:
                fields[n] = v
        fields["status"] = _STATUSES.get(fields["status"], fields["status"])
        if fields["last_status"] is not None:
            fields["last_status"] = _STATUSES.get(fields["last_status"], fields["last_status"])
        return JobState(job=job, **fields)


class _Items:
    """``JobTable.items()``: iterable, sized, and cheap to make."""

    __slots__ = ("_table",)

    def __init__(self, table: JobTable):
        self._table = table

    def __len__(self) -> int:
        return len(self._table)

    def __iter__(self):
        t = self._table
        live = t._live
        for job, row in t._packed_rows(live):
            if row is None:
                state = live.get(job)
                if state is not None:
                    yield job, state
            else:
                yield job, t._unpack(job, *row)
