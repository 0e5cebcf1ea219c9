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
and, after each entry, compares the ads it changed with the ads as last written:
every state a job passes through gets its lines, a completed job's ``JobStatus 4``
before the ``102`` of its leaving, as HTCondor writes them.  The end line carries
the journal position the transaction reaches, ``106 #journal N`` (the comment
HTCondor's EndTransaction record allows), so a writer restarting after a crash knows
where the file ends and writes each change exactly once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import chain

from jobledger.eventcore.projections.queue import Proc, QueueFold
from jobledger.eventcore.projections.userrecs import UserRecFold

__all__ = ["QueueLogFold", "PackedProcs", "pack_proc", "unpack_proc", "file_header", "transaction_text",
           "BEGIN_LINE", "end_line", "end_position", "HEADER_KEY"]

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
        return packed       # never changed in place: a transaction copies a row first
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
        cluster from its memory.  A changed cluster the fold no longer holds has left
        the queue (``QueueFold.forget``)."""
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


class QueueLogFold:
    """The queue folded from journal entries; each entry is folded as a transaction of
    its own, whose undo log holds the ads it changed as they were before it -- the ads
    as last written -- so the fold is the only copy of the queue kept, out of memory
    between steps (``PackedProcs``, or ``procs``: one keeping it elsewhere)."""

    def __init__(self, procs: PackedProcs | None = None) -> None:
        self.packed = procs if procs is not None else PackedProcs()
        self.fold = QueueFold(loader=self.packed)
        self.written: dict[str, dict] = {}      # the User and Project records as last written
        self.next_cluster = 1
        self.position = 0
        self.userrecs = UserRecFold()
        self.userrec_ids: dict[tuple[str, str], int] = {}
        self.next_userrec = FIRST_USERREC_ID

    def apply(self, entries: Iterable) -> list[str]:
        """The lines for ``entries`` (``eventcore.journal.Entry``s, in order)."""
        lines: list[str] = []
        fold = self.fold
        touched: set = set()
        touched_clusters: set = set()
        for entry in entries:
            if entry.type == "userrec":
                lines += self._userrec(entry.payload)
            fold.begin()
            fold.apply(entry.position, entry.time, entry.job, entry.type, entry.payload)
            self.position = entry.position
            changes = fold.take_changes()
            for cluster in sorted(changes.clusters):
                if cluster >= self.next_cluster:
                    self.next_cluster = cluster + 1
                    lines.append(f"103 {HEADER_KEY} NextClusterNum {self.next_cluster}")
                lines += ad_lines(cluster_key(cluster), fold.before_cluster(cluster),
                                  fold.clusters.get(cluster))
            for cluster, proc in sorted(changes.procs):
                old, row = fold.before_proc((cluster, proc)), fold.procs.get((cluster, proc))
                lines += ad_lines(proc_key(cluster, proc), None if old is None else old.ad,
                                  None if row is None else row.ad)
            fold.commit()
            touched.update(changes.procs)
            touched_clusters |= changes.clusters
            gone_procs = [k for k in changes.procs if fold.procs.get(k) is None]
            gone_clusters = [c for c in changes.clusters if fold.clusters.get(c) is None]
            if gone_procs or gone_clusters:
                fold.forget(gone_procs, gone_clusters)
            if len(fold.procs) >= SETTLE_EVERY:
                self.packed.settle(fold, touched, touched_clusters)
                touched, touched_clusters = set(), set()
        self.packed.settle(fold, touched, touched_clusters)
        return lines

    def saved(self) -> dict:
        """What this fold holds besides its procs and clusters (those are in ``packed``,
        settled after each ``apply``), as JSON values: ``restore`` takes it back."""
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
