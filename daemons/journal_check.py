"""Is this journal whole?  The check a pool makes before it starts, and audit's first part.

``read_rows(conn, faults)`` yields the journal's rows in order and keeps
going past pages SQLite cannot read: each unreadable run of positions is a
``page`` fault (the rows after it are read again).  ``verify(conn)`` runs
the chained CRC and position continuity over them (``checksum``,
``continuity``), compares the end with the high-water mark kept outside
the database (``evidence``, daemons.evidence) and returns a ``Verdict``.
``check_before_start(local_dir)`` raises ``JournalCorrupt`` (or
``JournalBehind``) naming every fault, so the master refuses to start a
pool on a damaged journal or one that went back in time; ``jobledger audit``
reports the same faults with how to recover (``RECOVERY``), and
``accept_loss(local_dir)`` (``jobledger journal accept-loss``) is the way on
with the journal as it is.
"""

from __future__ import annotations

import os
import re
import zlib
from pathlib import Path
from typing import Callable, Iterator, NamedTuple

from jobledger.eventcore.codecs.journal import Row, row_span
from jobledger.eventcore.errors import JournalBehind, JournalCorrupt, JournalError
from jobledger.daemons.evidence import HighWater, Mark
from jobledger.daemons.storage.reader import Reader
from jobledger.daemons.storage.schema import DB_NAME

__all__ = ["Fault", "Verdict", "read_rows", "verify", "evidence_faults", "check_before_start",
           "RECOVERY", "open_readonly", "accept_loss", "known_cluster", "written_logs",
           "logged_cluster", "log_faults"]


RECOVERY = (
    "To recover: stop the pool, put back journal.sqlite (with its -wal file) from a copy taken "
    "after the last commit, and start again; or, to go on with the journal as it is (jobs whose "
    "records are missing will run again, cluster ids still continue after the highest one ever "
    "used), run `jobledger journal accept-loss --local-dir {local_dir}`.")


class Fault(NamedTuple):
    kind: str          # page | checksum | continuity | evidence
    message: str
    position: int | None = None


class Verdict(NamedTuple):
    head: int          # last position read
    checksum: int      # chained checksum there
    records: int
    mark: Mark | None
    faults: list

    @property
    def ok(self) -> bool:
        return not self.faults


def open_readonly(path) -> Reader:
    return Reader(path)


def read_rows(reader: Reader, faults: list, after: int = 0) -> Iterator[tuple]:
    """The rows (tuples of ``Row``'s fields) after ``after`` in order; unreadable
    runs become ``page`` faults and reading goes on after them."""
    def lost(first: int, last: int | None, error) -> None:
        if last is None:
            faults.append(Fault("page", f"no row after position {first - 1} can be read "
                                f"({error}): a damaged page of the database file", first))
        else:
            faults.append(Fault("page", f"rows at positions {first}..{last} cannot be read "
                                f"({error}): a damaged page of the database file", first))
    return reader.rows_past_damage(after, lost)


def verify(conn: Reader, local_dir=None, keep: list | None = None) -> Verdict:
    """Chain, continuity and pages of the whole journal, and its end against the mark.

    ``keep``: a list the rows are appended to (audit reads them once).
    """
    # The mark first: read after the journal, it could be ahead of a live pool's snapshot.
    mark = HighWater(local_dir).read() if local_dir is not None else None
    faults: list = []
    rows = read_rows(conn, faults) if conn.exists() else iter(())   # no table: no rows, no damage
    if keep is not None:
        rows = _kept(rows, keep)
    head, checksum, count = _chain(rows, faults)
    faults.sort(key=lambda f: f.position or 0)
    faults += evidence_faults(conn, mark, head, local_dir)
    return Verdict(head, checksum, count, mark, faults)


def _kept(rows, keep: list):
    for row in rows:
        row = Row(*row)
        keep.append(row)
        yield row


def _chain(rows, faults: list) -> tuple[int, int, int]:
    """``verify_rows`` over raw tuples, inlined: this loop is the start-up cost of a
    pool (bench/bench_journal.py, 1M records).  Returns (last position, its
    checksum, rows)."""
    crc, expected, previous, count = zlib.crc32, 1, 0, 0
    position = 0
    for position, time, cluster, proc, kind, payload, key, checksum, _ in rows:
        if kind == "procs":       # a block of procs ends at the last position it stands for
            try:
                expected += row_span(kind, payload, position) - 1
            except (JournalError, KeyError, TypeError) as exc:
                faults.append(Fault("payload", f"unreadable block of procs: {_describe(exc)}",
                                    position))
        if position != expected:
            faults.append(Fault("continuity", f"position gap: expected {expected}, found "
                                f"{position}", position))
        try:
            want = crc(f"{position}\x1f{time!r}\x1f{cluster}\x1f{proc}\x1f{kind}\x1f{key or ''}"
                       f"\x1f{payload}".encode("utf-8"), previous)
        except (UnicodeError, TypeError):
            want = None
        if want != checksum:
            faults.append(Fault("checksum", f"checksum mismatch (stored {_hex(checksum)}, "
                                f"computed {_hex(want)})", position))
        previous, expected = checksum, position + 1
        count += 1
    return position, previous, count


def _describe(exc: Exception) -> str:
    return _reason(exc) if isinstance(exc, JournalError) else repr(exc)


def _reason(exc: JournalError) -> str:
    return exc.message if isinstance(exc, JournalCorrupt) else str(exc)


def _hex(value) -> str:
    return f"{value:08x}" if isinstance(value, int) else repr(value)


def evidence_faults(conn, mark: Mark | None, head: int, local_dir) -> list:
    """The journal against its high-water mark: behind it, or not the journal it recorded."""
    if mark is None or mark.position == 0:
        return []
    where = Path(local_dir) / "spool" / "journal.hwm"
    if head == 0 and conn is not None and not conn.exists():
        return [Fault("evidence", f"{conn.file_name() or 'journal.sqlite'} holds no journal at "
                      f"all, not even its tables (a young pool keeps them in journal.sqlite-wal "
                      f"until its first checkpoint), but {where} records that positions up to "
                      f"{mark.position} were committed: records 1..{mark.position} are missing "
                      "(a deleted or damaged journal.sqlite-wal)", 1)]
    if head < mark.position:
        return [Fault("evidence", f"the journal ends at position {head}, but {where} records "
                      f"that positions up to {mark.position} were committed: records "
                      f"{head + 1}..{mark.position} are missing (a damaged or deleted "
                      "journal.sqlite-wal, or a journal.sqlite deleted or replaced)", head + 1)]
    try:
        found = conn.checksum_at(mark.position)
    except JournalError:
        return []       # reported as a page fault
    if found is not None and found != mark.checksum:
        return [Fault("evidence", f"the record at position {mark.position} is not the one "
                      f"committed there (checksum {found:08x}, {where} records "
                      f"{mark.checksum:08x}): this journal.sqlite is another journal or was "
                      "rewritten", mark.position)]
    return []


def check_before_start(local_dir) -> Verdict:
    """The whole check; raise ``JournalBehind``/``JournalCorrupt`` naming every fault.

    Beside the mark, the logs the pool wrote are evidence too: the global
    event log (``EVENT_LOG`` of the pool's condor_config) and the user logs
    the journal still lists must not hold a cluster id the journal (or the
    mark) never reached.
    """
    path = Path(local_dir) / DB_NAME
    if not path.exists():
        verdict = Verdict(0, 0, 0, HighWater(local_dir).read(), [])
        faults = evidence_faults(None, verdict.mark, 0, local_dir)
        faults += log_faults(written_logs(local_dir, None), lambda: known_cluster(None, verdict.mark))
    else:
        try:
            conn = open_readonly(path)
            try:
                verdict = verify(conn, local_dir)
                faults = verdict.faults + log_faults(written_logs(local_dir, conn),
                                                     lambda: known_cluster(conn, verdict.mark))
            finally:
                conn.close()
        except JournalError as exc:
            raise JournalCorrupt(f"the database file cannot be read: {_reason(exc)}",
                                 path=str(path)) from None
    if faults:
        shown = "\n".join(f"  {f.kind}" + ("" if f.position is None else f" at position {f.position}")
                          + f": {f.message}" for f in faults[:20])
        more = f"\n  ... and {len(faults) - 20} more" if len(faults) > 20 else ""
        cls = JournalBehind if all(f.kind == "evidence" for f in faults) else JournalCorrupt
        raise cls(f"refusing to start on this journal ({len(faults)} faults):\n{shown}{more}\n"
                  f"`jobledger audit --local-dir {local_dir}` reports everything. "
                  + RECOVERY.format(local_dir=local_dir), path=str(path))
    return verdict


_EVENT_HEAD = re.compile(rb"^\d{3} \((\d+)\.\d+\.\d+\) ", re.M)
_TAIL = 64 * 1024


def known_cluster(conn, mark: Mark | None) -> int:
    cluster = 0
    if conn is not None:
        try:
            cluster = conn.max_cluster()
        except JournalError:
            pass           # reported as a page fault
    return max(cluster, mark.cluster if mark else 0)


def written_logs(local_dir, conn) -> list[str]:
    """The event log of the pool's configuration, and the logs the journal lists."""
    from jobledger.daemons.config_files import config_value, read_pool_config
    paths = []
    config = Path(local_dir) / "condor_config"
    if config.is_file():
        try:
            event_log = config_value(read_pool_config(config), "EVENT_LOG", "")
        except Exception:  # noqa: BLE001 - an unreadable config is the master's to report
            event_log = ""
        if event_log:
            paths.append(event_log)
    if conn is not None:
        try:
            paths += conn.log_paths()
        except JournalError:
            pass
    return list(dict.fromkeys(paths))


def logged_cluster(path: str) -> int:
    """The largest cluster id among the events at the end of a log (0: none, no file)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - _TAIL))
            tail = f.read()
    except OSError:
        return 0
    return max((int(m.group(1)) for m in _EVENT_HEAD.finditer(tail)), default=0)


def log_faults(paths: list[str], known: Callable[[], int]) -> list:
    """Logs holding events of clusters the journal never had: it lost them.

    ``known()`` (the largest cluster id the journal or its mark has) is asked
    after the files are read: a running pool writes only committed records.
    """
    seen = {path: logged_cluster(path) for path in paths}
    known_now = known() if any(seen.values()) else 0
    faults = []
    for path, cluster in seen.items():
        if cluster > known_now:
            faults.append(Fault("evidence", f"{path} holds events of cluster {cluster}, but the "
                                f"journal's clusters end at {known_now}: the journal lost records",
                                None))
    return faults


def accept_loss(local_dir, said: list | None = None) -> tuple[Mark | None, Mark]:
    """Go on with the journal as it is (the owner's decision); return (old mark, new mark).

    A journal behind its high-water mark (lost WAL frames, a lost -wal): the
    mark moves back to it.  A journal whose own record chain is damaged (a
    page that cannot be read, a checksum mismatch, a gap, an unreadable
    block): it is cut at the first damaged record, everything before it kept
    (daemons.journal_cut), and the mark set there.  Refused while the pool
    runs.  Cluster ids keep counting from the largest ever used.  ``said``
    gets a line for each thing given up.
    """
    from jobledger.daemons.master import lock_local_dir, pool_running_in
    local_dir = Path(local_dir)
    lock = lock_local_dir(local_dir)         # held while the mark moves: no master starts
    if lock is None:
        raise JournalError(f"{pool_running_in(local_dir)}: stop it first")
    try:
        return _move_mark(local_dir, local_dir / DB_NAME, said if said is not None else [])
    finally:
        os.close(lock)


def _move_mark(local_dir: Path, path: Path, said: list) -> tuple[Mark | None, Mark]:
    water = HighWater(local_dir)
    old, head, checksum, cluster = water.mark, 0, 0, 0
    logs: list[str] = []
    if path.exists():
        try:
            conn = open_readonly(path)
        except JournalError as exc:
            raise JournalCorrupt(f"the database file cannot be read: {_reason(exc)}; put back "
                                 "a copy of journal.sqlite", path=str(path)) from None
        try:
            verdict = verify(conn, local_dir)
            head, checksum = verdict.head, verdict.checksum
            logs = written_logs(local_dir, conn)
            cluster = max([known_cluster(conn, old)] + [logged_cluster(p) for p in logs])
        finally:
            conn.close()
        damaged = [f for f in verdict.faults if f.kind != "evidence"]
        if damaged:
            from jobledger.daemons.journal_cut import cut_journal
            cut = cut_journal(local_dir, damaged)
            head, checksum = cut.head, cut.checksum
            said += cut.lines()
    else:
        cluster = max([known_cluster(None, old)]
                      + [logged_cluster(p) for p in written_logs(local_dir, None)])
    new = Mark(head, checksum, cluster)       # no id a log already shows is used again
    water.reset(new)
    water.close()
    return old, new
