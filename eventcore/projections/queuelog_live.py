"""The queue as HTCondor's live ``job_queue.log``: what each journal entry changes in
the ads, as the schedd's transaction log records it.  Pure.

HTCondor's schedd appends to JOB_QUEUE_LOG, for each transaction, ``105`` (begin),
then one line per change of an ad -- ``101 KEY Job Machine`` (new ad), ``103 KEY NAME
VALUE`` (set), ``104 KEY NAME`` (delete), ``102 KEY`` (destroy) -- and ``106``
(end).  Keys: ``0.0`` the header ad (``NextClusterNum``), ``0<c>.-1`` a cluster ad,
``<c>.<p>`` a proc ad, ``0.<n>`` (n > 1) a User or Project record (``101 0.<n> Owner
(empty)`` or ``Project``; HTCondor's MakeUserRec/MakeProjectRec, numbered in the order
they are made, from LAST_RESERVED_USERREC_ID + 1 = 2, never reused).  A file starts
with ``107 <seq> CreationTimestamp <time>`` and the header ad.

``QueueLogFold`` folds journal entries (``eventcore.projections.queue.QueueFold``)
and gives each entry its lines: for one that only changes a proc's attributes (a
``set``, an event), what it sets and deletes (``changed_lines``); for any other, the
ads it changed compared with the ads as last written.  Every state a job passes
through gets its lines, a completed job's ``JobStatus 4``
before the ``102`` of its leaving, as HTCondor writes them.  The end line carries
the journal position the transaction reaches, ``106 #journal N`` (the comment
HTCondor's EndTransaction record allows), so a writer restarting after a crash knows
where the file ends and writes each change exactly once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from itertools import chain, filterfalse

from jobledger.eventcore.projections.queue import Proc, QueueFold
from jobledger.eventcore.projections.userrecs import UserRecFold

__all__ = ["QueueLogFold", "PackedProcs", "pack_proc", "unpack_proc", "file_header", "transaction_text",
           "BEGIN_LINE", "end_line", "end_position", "HEADER_KEY", "as_journaled", "changed_lines"]

HEADER_KEY = "0.0"
FIRST_USERREC_ID = 2       # HTCondor's LAST_RESERVED_USERREC_ID + 1
_ADTYPE = {"user": "Owner", "project": "Project"}
_END = re.compile(r"^106 #journal (\d+)$")


def cluster_key(cluster: int) -> str:
    return f"0{cluster}.-1"


def proc_key(cluster: int, proc: int) -> str:
    return f"{cluster}.{proc}"


def file_header(creation_time: int, sequence: int = 1) -> str:
    return f"107 {sequence} CreationTimestamp {int(creation_time)}\n101 {HEADER_KEY} Job Machine\n"


BEGIN_LINE = "105 \n"


def end_line(position: int) -> str:
    """A transaction's last line, naming the journal position it reaches."""
    return f"106 #journal {position}\n"


def transaction_text(lines: list[str], position: int) -> str:
    """One transaction: ``105``, the lines, ``106`` naming the journal position reached."""
    return BEGIN_LINE + "".join(line + "\n" for line in lines) + end_line(position)


def end_position(line: str) -> int | None:
    """The journal position an end-of-transaction line names, or None."""
    found = _END.match(line.rstrip("\n"))
    return int(found.group(1)) if found else None


def as_journaled(kind: str, payload: Mapping) -> Mapping:
    """A payload as appended (its dicts in the order they were built) with the dicts
    whose order the fold's records follow sorted, as the journal's text (canonical
    JSON, sorted keys) gives them back: the names a ``set`` or ``userrec`` sets, a
    ``cluster`` or ``proc`` ad (a block's procs are sorted as they are expanded).  The
    fold reads the rest (an event's fields) by name.  ``payload`` is not changed."""
    if kind == "set" or kind == "userrec":
        sets = payload["set"]
        if len(sets) > 1:
            return {**payload, "set": dict(sorted(sets.items()))}
    elif kind == "cluster" or kind == "proc":
        return {**payload, "ad": dict(sorted(payload["ad"].items()))}
    return payload


def _one_line(text: str) -> str:
    # a record is one line (HTCondor refuses a value holding a newline): keep it one
    if "\n" in text or "\r" in text:
        return text.replace("\r", " ").replace("\n", " ")
    return text


def ad_lines(key: str, before: dict | None, after: dict | None, mytype: str = "Job") -> list[str]:
    """The records turning the ad ``before`` into ``after`` (None: no such ad); a new ad
    of ``mytype`` (HTCondor writes the target type "Machine" only for a Job)."""
    if after is None:
        return [] if before is None else [f"102 {key}"]
    prefix = f"103 {key} "
    if before is None:      # a new ad: every attribute (most of a big submit's lines)
        lines = [f"101 {key} {mytype} {'Machine' if mytype == 'Job' else '(empty)'}"]
        texts = "".join(after.values())
        if "\n" in texts or "\r" in texts:
            lines += [prefix + name + " " + _one_line(value) for name, value in after.items()]
        else:
            lines += [prefix + name + " " + value for name, value in after.items()]
        return lines
    lines = [prefix + name + " " + _one_line(value) for name, value in after.items()
             if before.get(name) != value]
    lines.extend(f"104 {key} {name}" for name in before if name not in after)
    return lines


_US = "\x1f"
SETTLE_EVERY = 4096      # procs a fold holds in memory before they are put back in the store


def pack_proc(row: Proc) -> str | Proc:
    """A proc as one string: its status, then ``name US text`` in the ad's order (the
    row itself when a text holds the separator)."""
    ad = row.ad
    packed = _US.join([str(row.status), *chain.from_iterable(ad.items())])
    return packed if packed.count(_US) == 2 * len(ad) else row


def unpack_proc(packed: str | Proc) -> Proc:
    if isinstance(packed, Proc):
        return packed.copy()     # the fold changes what it loads in place
    status, *rest = packed.split(_US)
    texts = iter(rest)
    return Proc(int(status), dict(zip(texts, texts)))


class PackedProcs:
    """Where a ``QueueLogFold`` keeps the queue between its steps, out of its queue
    fold's memory (that fold's loader): each proc packed into one string
    (``pack_proc``), each cluster as its ad and its count of procs.  This one keeps
    them in dicts; ``daemons.queuelog_state`` keeps them in SQLite (``load_proc``,
    ``load_cluster`` and ``store`` overridden)."""

    def __init__(self) -> None:
        self.rows: dict[tuple[int, int], str | Proc] = {}
        self.cluster_rows: dict[int, tuple[dict | None, int]] = {}

    def proc(self, cluster: int, proc: int) -> Proc | None:
        packed = self.load_proc(cluster, proc)
        return None if packed is None else unpack_proc(packed)

    def cluster(self, cluster: int) -> dict | None:
        found = self.load_cluster(cluster)
        return None if found is None else found[0]

    def proc_count(self, cluster: int) -> int:
        found = self.load_cluster(cluster)
        return 0 if found is None else found[1]

    def settle(self, fold: QueueFold, keys, clusters) -> None:
        """Store the procs ``keys`` and the clusters ``clusters`` as ``fold`` now has them
        (gone: dropped) with every other cluster it holds, then drop every proc and
        cluster from its memory."""
        procs = fold.procs
        rows = []
        for key in keys:
            row = procs.get(key)
            rows.append((key, None if row is None else pack_proc(row)))
        held = set(fold.clusters) | set(fold.counts)
        kept = [(cluster, fold.cluster(cluster), fold.count(cluster)) if cluster in held
                else (cluster, None, 0) for cluster in sorted(held | set(clusters))]
        self.store(rows, kept)
        fold.evict(list(procs))
        fold.forget(list(procs), ())        # what is left: jobs that left, now deleted here too
        fold.evict_clusters(held)

    # ------------------------------------------------------------ storage --
    def load_proc(self, cluster: int, proc: int) -> str | Proc | None:
        return self.rows.get((cluster, proc))

    def load_cluster(self, cluster: int) -> tuple[dict | None, int] | None:
        return self.cluster_rows.get(cluster)

    def store(self, procs: list, clusters: list) -> None:
        """``procs``: ``((cluster, proc), packed or None)``; ``clusters``: ``(cluster, ad
        or None, count)`` (no ad and no procs: gone)."""
        for key, packed in procs:
            if packed is None:
                self.rows.pop(key, None)
            else:
                self.rows[key] = packed
        for cluster, ad, count in clusters:
            if ad is None and not count:
                self.cluster_rows.pop(cluster, None)
            else:
                self.cluster_rows[cluster] = (ad, count)


def changed_lines(key: str, ad: dict, sets: Mapping[str, str], deletes) -> list[str]:
    """The records that ``ad.update(sets)`` and then popping ``deletes`` make, in the
    order ``ad_lines`` gives them (``ad`` as it is before): the attributes already in
    ``ad`` keep their places and new ones follow in the order of ``sets``, so only the
    names these two hold are looked at, not the whole ad."""
    get = ad.get
    names = [name for name, value in sets.items() if get(name) != value]
    if deletes:
        gone = set(deletes)
        if not gone.isdisjoint(names):
            names = [name for name in names if name not in gone]
    if len(names) > 1:
        kept = ad.keys() & names
        if kept:            # those in the ad's order, then the new ones in the order set
            names = [*filter(kept.__contains__, ad), *filterfalse(kept.__contains__, names)]
    prefix = f"103 {key} "
    lines = [prefix + name + " " + sets[name] for name in names]
    text = "".join(lines)
    if "\n" in text or "\r" in text:
        lines = [prefix + name + " " + _one_line(sets[name]) for name in names]
    if deletes:
        lines.extend(f"104 {key} {name}" for name in filter(gone.__contains__, ad))   # once each
    return lines


class _LineFold(QueueFold):
    """A queue fold that, while ``lines`` is a list, changes a proc's attributes in
    place without an undo copy and appends the records of the change to ``lines``
    (``changed_lines``), noting the proc in ``touched``."""

    keeps_history = False

    def __init__(self, loader) -> None:
        super().__init__(loader=loader)
        self.lines: list[str] | None = None
        self.touched: set = set()

    def _change_proc(self, key, row: Proc, sets, deletes, status: int) -> None:
        lines = self.lines
        if lines is None:
            super()._change_proc(key, row, sets, deletes, status)
            return
        ad = row.ad
        lines += changed_lines(f"{key[0]}.{key[1]}", ad, sets, deletes)
        ad.update(sets)
        for name in deletes:
            ad.pop(name, None)
        row.status = status
        self.touched.add(key)


class QueueLogFold:
    """The queue folded from journal entries; each entry is folded as a transaction of
    its own, whose undo log holds the ads it changed as they were before it -- the ads
    as last written -- so the fold is the only copy of the queue kept: up to
    SETTLE_EVERY procs in memory, the rest in ``PackedProcs`` (or ``procs``: one
    keeping them elsewhere).  An entry that only changes the attributes of a proc
    already in the queue (most: a ``set``, an event) needs no transaction: its records
    are made from what it changes (``changed_lines``) as the proc is changed in place."""

    def __init__(self, procs: PackedProcs | None = None) -> None:
        self.packed = procs if procs is not None else PackedProcs()
        self.fold = _LineFold(self.packed)
        self.written: dict[str, dict] = {}      # the User and Project records as last written
        self.next_cluster = 1
        self.position = 0
        self.userrecs = UserRecFold()
        self.userrec_ids: dict[tuple[str, str], int] = {}
        self.next_userrec = FIRST_USERREC_ID
        self._touched_clusters: set = set()     # changed since the last ``settle``

    def apply(self, entries: Iterable) -> list[str]:
        """The lines for ``entries`` (``eventcore.journal.Entry``s, in order)."""
        lines: list[str] = []
        fold = self.fold
        try:
            for entry in entries:
                kind, job = entry.type, entry.job
                if job.proc < 0 or job.cluster < 0:
                    self._transaction(entry, lines)
                elif kind == "set" or kind == "event":
                    if fold.proc(job.cluster, job.proc) is None:
                        self._transaction(entry, lines)
                    else:
                        fold.lines = lines
                        fold.apply(entry.position, entry.time, job, kind, entry.payload)
                        fold.lines = None
                elif kind == "proc" and fold.proc(job.cluster, job.proc) is None:
                    self._new_proc(entry, lines)
                elif kind == "leave":
                    self._leave(entry, lines)
                else:
                    self._transaction(entry, lines)
                self.position = entry.position
                if len(fold.procs) >= SETTLE_EVERY or len(fold.touched) >= SETTLE_EVERY:
                    self.settle()
        finally:
            fold.lines = None
        return lines

    def settle(self) -> None:
        """Put what the fold holds in memory back in its store and empty that memory
        (``PackedProcs.settle``): done when it holds SETTLE_EVERY procs or has changed
        as many since the last time, and before ``saved``."""
        self.packed.settle(self.fold, self.fold.touched, self._touched_clusters)
        self.fold.touched, self._touched_clusters = set(), set()

    def _new_proc(self, entry, lines: list[str]) -> None:
        """A ``proc`` entry of a proc not in the queue: its records are its new ad's."""
        fold, job = self.fold, entry.job
        fold.apply(entry.position, entry.time, job, "proc", entry.payload)
        fold.take_changes()
        key = (job.cluster, job.proc)
        row = fold.procs[key]
        assert row is not None          # _on_proc put it there, or raised
        lines += ad_lines(proc_key(*key), None, row.ad)
        fold.touched.add(key)

    def _leave(self, entry, lines: list[str]) -> None:
        """A ``leave`` entry: the proc's ``102``, after its cluster's when it was the
        last (the ads as they were: a cluster ad is replaced, never changed in place)."""
        fold, job = self.fold, entry.job
        cluster_ad = fold.cluster(job.cluster)
        fold.apply(entry.position, entry.time, job, "leave", entry.payload)
        changes = fold.take_changes()
        if changes.clusters:                    # the cluster left with its last job
            lines += self._cluster_lines(job.cluster, cluster_ad)
            self._touched_clusters |= changes.clusters
        lines.append(f"102 {proc_key(job.cluster, job.proc)}")
        fold.touched.add((job.cluster, job.proc))

    def _cluster_lines(self, cluster: int, before: dict | None) -> list[str]:
        lines = []
        if cluster >= self.next_cluster:
            self.next_cluster = cluster + 1
            lines.append(f"103 {HEADER_KEY} NextClusterNum {self.next_cluster}")
        return lines + ad_lines(cluster_key(cluster), before, self.fold.clusters.get(cluster))

    def _transaction(self, entry, lines: list[str]) -> None:
        """Fold ``entry`` as a transaction of its own; its records, from the ads it
        changed as they were before it, go to ``lines``."""
        fold = self.fold
        if entry.type == "userrec":
            lines += self._userrec(entry.payload)
        fold.begin()
        fold.apply(entry.position, entry.time, entry.job, entry.type, entry.payload)
        changes = fold.take_changes()
        for cluster in sorted(changes.clusters):
            lines += self._cluster_lines(cluster, fold.before_cluster(cluster))
        for cluster, proc in sorted(changes.procs):
            old, row = fold.before_proc((cluster, proc)), fold.procs.get((cluster, proc))
            lines += ad_lines(proc_key(cluster, proc), None if old is None else old.ad,
                              None if row is None else row.ad)
        fold.commit()
        fold.touched.update(changes.procs)
        self._touched_clusters |= changes.clusters

    def saved(self) -> dict:
        """What this fold holds besides its procs and clusters (those are in ``packed``
        once ``settle``d), as JSON values: ``restore`` takes it back."""
        return {"position": self.position, "next_cluster": self.next_cluster,
                "written": self.written, "userrecs": self.userrecs.records,
                "userrec_ids": [[kind, name, n] for (kind, name), n in self.userrec_ids.items()],
                "next_userrec": self.next_userrec}

    def restore(self, saved: dict) -> None:
        """Take back what ``saved`` gave (its procs and clusters being in ``packed``)."""
        self.position = int(saved["position"])
        self.next_cluster = int(saved["next_cluster"])
        self.written = {str(k): dict(v) for k, v in saved["written"].items()}
        self.userrecs.records = {kind: {str(name): dict(ad) for name, ad in saved["userrecs"][kind].items()}
                                 for kind in ("user", "project")}
        self.userrec_ids = {(str(kind), str(name)): int(n) for kind, name, n in saved["userrec_ids"]}
        self.next_userrec = int(saved["next_userrec"])

    def _userrec(self, payload) -> list[str]:
        """A User or Project record's change, as its ``0.<n>`` ad (its MyType is the 101
        line's, not an attribute)."""
        kind, name = payload["kind"], payload["name"]
        self.userrecs.apply(payload)
        ad = self.userrecs.records[kind].get(name)
        number = self.userrec_ids.get((kind, name))
        if number is None:
            if ad is None:
                return []
            number = self.userrec_ids[(kind, name)] = self.next_userrec
            self.next_userrec += 1
        if ad is None:
            del self.userrec_ids[(kind, name)]       # a record made again gets a new number
        shown = None if ad is None else {k: v for k, v in ad.items() if k != "MyType"}
        return self._diff(f"0.{number}", shown, _ADTYPE[kind])

    def _diff(self, key: str, ad: dict | None, mytype: str = "Job") -> list[str]:
        before = self.written.get(key)
        lines = ad_lines(key, before, ad, mytype)
        if ad is None:
            self.written.pop(key, None)
        elif lines:
            self.written[key] = dict(ad)
        return lines
