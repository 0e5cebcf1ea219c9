"""From a ``Submit`` to the job ads of one cluster, fast.

``plan_cluster`` returns a ``ClusterPlan``, ``stream_cluster`` a
``ClusterStream`` whose procs are made as they are read (a 10^6-job
submission is sent to the schedd in chunks, never held whole): the attributes common to every
proc once (``cluster_attrs``) and, per proc, only what differs
(``proc_attrs``: ProcId, JobStatus and the attributes whose commands use
per-job macros such as ``$(ProcId)`` or queue variables).  Values are
ClassAd expression text, exactly what a schedd stores.

How it stays fast: every command is expanded once with the per-job macros
kept as placeholders (``macros.compile_template``); a command without
placeholders is a cluster constant, one with placeholders becomes a format
string filled per job.  Only the translation rules (``translate.py``) that
read a per-job command run per job.  Commands where a per-job value feeds a
macro function, a default or ``$RANDOM_...`` are expanded in full per job.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import NamedTuple

import attrs

from jobledger.eventcore.attrnames import fold
from jobledger.eventcore.errors import SubmitError

from . import translate as T
from .macros import Expander, MacroError, compile_template, format_number
from .queue import load_rows
from .text import too_many_jobs
from .requirements import ARCH, OPSYS

PER_JOB = ("procid", "process", "step", "row", "itemindex", "jobid", "node")
NUMERIC_SLOTS = frozenset({0, 1, 2, 3, 4})     # the PER_JOB slots that always hold integers
_CONSTANT_BASE = {
    "MyType": '"Job"', "TargetType": '"Machine"', "ExitBySignal": "false", "ExitStatus": "0",
    "RemoteWallClockTime": "0.0", "RemoteUserCpu": "0.0", "RemoteSysCpu": "0.0",
    "CumulativeRemoteUserCpu": "0.0", "CumulativeRemoteSysCpu": "0.0", "NumCkpts": "0",
    "NumJobStarts": "0", "NumJobCompletions": "0", "NumRestarts": "0", "NumSystemHolds": "0",
    "CommittedTime": "0", "CommittedSlotTime": "0", "CumulativeSlotTime": "0", "TotalSuspensions": "0",
    "LastSuspensionTime": "0", "CumulativeSuspensionTime": "0", "CommittedSuspensionTime": "0",
    "CurrentHosts": "0", "TransferInputSizeMB": "0", "LeaveJobInQueue": "false",
}


@attrs.frozen
class ClusterPlan:
    """The job ads of one cluster: common attributes once, per-proc differences."""

    cluster_id: int
    cluster_attrs: dict[str, str]
    proc_attrs: list[dict[str, str]]
    warnings: tuple[str, ...] = ()

    @property
    def num_procs(self) -> int:
        return len(self.proc_attrs)

    def merged(self, index: int) -> dict[str, str]:
        """Attribute text of proc ``index`` as a query shows it (cluster + proc)."""
        out = dict(self.cluster_attrs)
        out.update(self.proc_attrs[index])
        return out

    def cluster_ad(self):
        """The common attributes as a ClassAd."""
        from jobledger.eventcore.classad import ClassAd, ExprTree
        ad = ClassAd()
        for name, text in self.cluster_attrs.items():
            ad[name] = ExprTree(text)
        return ad

    def ads(self) -> Iterator:
        """Every proc's full job ad (``eventcore.classad.ClassAd``); the
        common expressions are parsed once and shared (they are immutable)."""
        from jobledger.eventcore.classad import ClassAd, ExprTree
        common = [(name, ExprTree(text)) for name, text in self.cluster_attrs.items()]
        for proc in self.proc_attrs:
            ad = ClassAd()
            for name, tree in common:
                ad[name] = tree
            for name, text in proc.items():
                ad[name] = ExprTree(text)
            yield ad


class _Job(NamedTuple):
    proc: int
    step: int
    row: int
    items: dict


def _itemdata_rows(itemdata) -> tuple[tuple[str, ...], list[dict]]:
    rows: list[dict] = []
    names: tuple[str, ...] = ("Item",)
    for n, item in enumerate(itemdata):
        if isinstance(item, str):
            rows.append({"Item": item})
        elif isinstance(item, dict):
            if n == 0:
                names = tuple(item)
            for key, value in item.items():
                if not isinstance(key, str) or not isinstance(value, str):
                    raise TypeError("itemdata dicts must map str to str")
            rows.append({name: item.get(name, "") for name in names})
        else:
            raise TypeError("itemdata items must be str or dict")
    return names, rows


@attrs.frozen
class JobSource:
    """The jobs a queue statement makes, produced as they are read: ``count``
    of them, ``item_names`` (the first row's variables), ``iter(source)``
    gives (proc, step, row, item values) afresh each time."""

    count: int
    item_names: tuple[str, ...]
    _make: object = attrs.field(alias="make")

    def __iter__(self) -> Iterator[_Job]:
        return self._make()


def job_source(sub, env, count: int = 0, itemdata=None, queue: str | None = None,
               first_proc: int = 0, max_jobs: int | None = None) -> JobSource:
    """The jobs the statement makes (``JobSource``); ``SubmitError``
    (condor_submit's words) when that is more than ``max_jobs``, or none."""
    if queue is not None and (count or itemdata is not None):
        raise ValueError("queue= cannot be combined with count= or itemdata=")
    if queue is None:
        sub.check_complete()
    spec, where = sub.queue_spec(queue, strict=True)
    n = count if count else spec.count
    if max_jobs is not None and n > max_jobs:
        raise SubmitError(too_many_jobs(max_jobs), *where)
    if itemdata is not None:
        _, rows = _itemdata_rows(itemdata)
        spec = attrs.evolve(spec, selection=None)
    else:
        bound = None if spec.selection is not None else max_jobs
        rows = load_rows(spec, env, where, bound, n)
    if rows is None:
        if spec.mode is not None and itemdata is None:
            raise SubmitError("invalid Queue statement: no items selected", *where)
        total, names = n, ()

        def make():
            return (_Job(first_proc + step, step, 0, {}) for step in range(n))
    else:
        selected = spec.selected(len(rows))
        total = n * len(selected)
        if max_jobs is not None and total > max_jobs:
            raise SubmitError(too_many_jobs(max_jobs), *where)
        names = tuple(rows[selected[0]]) if total else ()

        def make():
            picked = rows.pick(selected) if hasattr(rows, "pick") else ((r, rows[r]) for r in selected)
            if n == 1:
                return (_Job(first_proc + i, 0, r, row) for i, (r, row) in enumerate(picked))
            return (_Job(first_proc + i * n + step, step, r, row)
                    for i, (r, row) in enumerate(picked) for step in range(n))
    if not total:
        raise SubmitError("invalid Queue statement: it makes no jobs", *where)
    return JobSource(total, names, make)


def job_list(sub, env, count: int = 0, itemdata=None, queue: str | None = None,
             first_proc: int = 0, max_jobs: int | None = None) -> list[_Job]:
    """Every job of ``job_source`` in a list."""
    return list(job_source(sub, env, count, itemdata, queue, first_proc, max_jobs))


def _static_macros(cluster_id: int, qdate: int) -> dict[str, str]:
    when = datetime.datetime.fromtimestamp(qdate, datetime.timezone.utc)
    return {"cluster": str(cluster_id), "clusterid": str(cluster_id), "joblistid": str(cluster_id),
            "taskid": "0", "arch": ARCH, "opsys": OPSYS,
            "islinux": "1", "iswindows": "0", "submit_time": str(qdate), "year": str(when.year),
            "month": str(when.month), "day": str(when.day)}


class _Planner:
    """Builds a ClusterPlan; one instance per plan_cluster call."""

    def __init__(self, sub, env, cluster_id: int, owner: str, spool: bool, qdate: int):
        self.sub = sub
        self.env = env
        self.cluster_id = cluster_id
        self.owner = owner
        self.spool = spool
        self.qdate = qdate
        self.statics = _static_macros(cluster_id, qdate)
        self.keys = {low: spelling for low, (spelling, _) in sub._macros.items()}

    def lookup_static(self, name: str) -> str | None:
        low = name.lower()
        hit = self.sub._macros.get(low)
        if hit is not None:
            return hit[1]
        return self.statics.get(low)

    def fail(self, command: str, exc: SubmitError) -> SubmitError:
        number, source = self.sub._lines.get(command, (None, "<submit>"))
        spelling = self.keys.get(command, command)
        raw = self.sub._macros.get(command, (spelling, ""))[1]
        kind = MacroError if isinstance(exc, MacroError) else SubmitError
        return kind(exc.message, number, f"{spelling} = {raw}", source)

    def job_lookup(self, job: _Job):
        live = {"procid": str(job.proc), "process": str(job.proc), "step": str(job.step),
                "row": str(job.row), "itemindex": str(job.row),
                "jobid": f"{self.cluster_id}.{job.proc}"}
        for name, value in job.items.items():
            live[name.lower()] = value

        def lookup(name: str) -> str | None:
            low = name.lower()
            value = live.get(low)
            if value is not None:
                return value
            return self.lookup_static(name)
        return lookup


@attrs.frozen
class ClusterStream:
    """A cluster's job ads made as they are read: ``cluster_attrs`` once,
    ``num_procs``, ``warnings``; ``procs()`` yields each proc's attribute
    dict (what ``ClusterPlan.proc_attrs`` holds), afresh on each call, so a
    10^6-job submission never holds them all.  A bad value met on the way
    raises ``SubmitError`` from the iteration."""

    cluster_id: int
    cluster_attrs: dict[str, str]
    num_procs: int
    warnings: tuple[str, ...]
    _procs: object = attrs.field(alias="procs")

    def procs(self) -> Iterator[dict[str, str]]:
        return self._procs()

    def plan(self) -> ClusterPlan:
        """Every proc made at once."""
        return ClusterPlan(self.cluster_id, self.cluster_attrs, list(self.procs()), self.warnings)


def plan_cluster(sub, env, *, cluster_id: int = 1, count: int = 0, itemdata=None,
                 queue: str | None = None, spool: bool = False, owner: str = "",
                 qdate: int = 0, first_proc: int = 0, fast: bool = True,
                 max_jobs: int | None = None) -> ClusterPlan:
    """All proc ads of one cluster (see the module docstring).

    ``fast=False`` expands every command in full for every job and runs
    every rule per job (the reference the fast path is tested against).
    ``max_jobs``: refuse a statement making more jobs (MAX_JOBS_PER_SUBMISSION)."""
    return stream_cluster(sub, env, cluster_id=cluster_id, count=count, itemdata=itemdata,
                          queue=queue, spool=spool, owner=owner, qdate=qdate, first_proc=first_proc,
                          fast=fast, max_jobs=max_jobs).plan()


def stream_cluster(sub, env, *, cluster_id: int = 1, count: int = 0, itemdata=None,
                   queue: str | None = None, spool: bool = False, owner: str = "",
                   qdate: int = 0, first_proc: int = 0, fast: bool = True,
                   max_jobs: int | None = None) -> ClusterStream:
    """``plan_cluster``'s work with the procs made as they are read (``ClusterStream``)."""
    jobs = job_source(sub, env, count, itemdata, queue, first_proc, max_jobs)
    planner = _Planner(sub, env, cluster_id, owner, spool, qdate)
    var_names = {name.lower(): name for name in jobs.item_names}
    slots = {name: i for i, name in enumerate(PER_JOB + tuple(var_names))}
    rules = T.RULES + T.custom_request_rules(planner.keys) + T.custom_attribute_rules(planner.keys)

    constants, templates, slow, derived = _compile_commands(planner, rules, slots, fast)
    varying = set(templates) | set(slow)
    cluster_rules, proc_rules = [], []
    for index, (inputs, fn) in enumerate(rules):
        per_job = varying.intersection(inputs) or not fast
        (proc_rules if per_job else cluster_rules).append((index, fn))

    present = T.present_spellings(planner.keys)
    base_job = T.Job({}, constants, env, owner, spool, present)
    cluster_attrs = _base_attrs(sub, env, cluster_id, qdate, owner)
    winner: dict[str, int] = {}
    for index, fn in cluster_rules:
        try:
            out = fn(base_job)
        except SubmitError as exc:
            raise _rule_error(planner, exc, rules[index][0]) from None
        cluster_attrs.update(out)
        for name in out:
            winner[name] = index
    try:    # "+JOBSTATUS", "MY.owner": one key per attribute, as the schedd stores it
        cluster_attrs = fold(cluster_attrs, {"jobstatus": "JobStatus", "owner": "Owner",
                                             "clusterid": "ClusterId", "procid": "ProcId"})
    except ValueError as exc:
        raise SubmitError(str(exc)) from None
    cluster_attrs.pop("ProcId", None)
    status = cluster_attrs.pop("JobStatus", "1")

    proc_rules = [(index, fn, {name for name, w in winner.items() if w > index})
                  for index, fn in proc_rules]

    def procs():
        return _proc_attrs(planner, jobs, slots, var_names, templates, slow, proc_rules, constants,
                           present, status, rules, derived)
    return ClusterStream(cluster_id, cluster_attrs, jobs.count, tuple(T.warnings_for(planner.keys)),
                         procs)


def _compile_commands(planner: _Planner, rules, slots: dict[str, int], fast: bool):
    """Sort the commands the rules read into cluster constants, per-job
    format strings over the slot values, and commands expanded in full per job."""
    sub, env = planner.sub, planner.env
    constants: dict[str, str | None] = {}
    templates: dict[str, str] = {}     # command -> format string over the slot values
    slow: list[str] = []               # commands expanded in full for every job
    read = {name for inputs, _ in rules for name in inputs}
    derived: list = []                 # (numeric slot, want_int, format) for $INT(ProcId,%03d)
    for low in planner.keys:
        if low not in read:
            continue        # a plain macro: expanded only where a command uses it
        raw = sub._macros[low][1]
        if not fast:
            slow.append(low)
            continue
        try:
            template = compile_template(raw, planner.lookup_static, env, env.cwd, slots, NUMERIC_SLOTS,
                                        derived)
        except MacroError as exc:
            raise planner.fail(low, exc) from None
        if template is None:
            slow.append(low)
        elif len(template) == 1:
            constants[low] = template[0].strip() or None
        else:
            templates[low] = "".join(p.replace("{", "{{").replace("}", "}}") if isinstance(p, str)
                                     else "{%d}" % p for p in template)
    return constants, templates, slow, derived


def _proc_attrs(planner, jobs, slots, var_names, templates, slow, proc_rules, constants, present,
                status, rules, derived) -> Iterator[dict[str, str]]:
    """The per-proc attribute dicts, one at a time (the hot loop of a big submit)."""
    env, owner, spool = planner.env, planner.owner, planner.spool
    cluster_id = planner.cluster_id
    item_names = [var_names[low] for low in tuple(slots)[len(PER_JOB):]]
    formats = list(templates.items())
    index = -1
    job = None
    view = T.Job({}, constants, env, owner, spool, present)   # one view, its values swapped per job
    shared: dict[str, str] = {}
    try:
        for job in jobs:
            proc_text = str(job.proc)
            items = job.items
            row_values = tuple([items.get(name, "") for name in item_names])
            row_text = str(job.row)
            live = (proc_text, proc_text, str(job.step), row_text, row_text,
                    f"{cluster_id}.{proc_text}", "") + row_values
            if derived:
                live += tuple([format_number(int(live[src]), want_int, fmt) for src, want_int, fmt in derived])
            if slow or any("$" in v for v in row_values):
                values = _full_values(planner, job, formats, slow, live)
            else:
                values = {command: (fmt.format(*live).strip() or None) for command, fmt in formats}
            proc = {"ProcId": proc_text, "JobStatus": status}
            if proc_rules:
                view.values = values
                for index, fn, blocked in proc_rules:
                    out = fn(view)
                    if blocked and not blocked.isdisjoint(out):
                        out = {k: v for k, v in out.items() if k not in blocked}
                    for name, text in out.items():
                        # long texts that repeat (Requirements) share one string
                        proc[name] = shared.setdefault(text, text) if len(text) > 64 else text
                index = -1
            yield proc
    except SubmitError as exc:
        if index < 0:
            raise
        raise _rule_error(planner, exc, rules[index][0], job) from None


def _full_values(planner: _Planner, job: _Job, formats, slow, live) -> dict:
    """Per-job values when a template cannot be used for this job: the
    commands that need it are expanded in full (item values holding ``$``
    are expanded again, as HTCondor does)."""
    row_values = live[len(PER_JOB):]
    values: dict[str, str | None] = {}
    if any("$" in v for v in row_values):
        full = [c for c, _ in formats] + list(slow)
    else:
        values = {command: (fmt.format(*live).strip() or None) for command, fmt in formats}
        full = slow
    expander = Expander(planner.job_lookup(job), planner.env, planner.env.cwd)
    for command in full:
        try:
            values[command] = expander.expand(planner.sub._macros[command][1]).strip() or None
        except MacroError as exc:
            raise planner.fail(command, exc) from None
    return values


def _rule_error(planner: _Planner, exc: SubmitError, inputs, job: _Job | None = None) -> SubmitError:
    if exc.line is not None:
        return exc
    present = [name for name in inputs if name in planner.keys]
    suffix = f" (job {planner.cluster_id}.{job.proc})" if job is not None else ""
    if present:
        err = planner.fail(present[0], exc)
        return SubmitError(err.message + suffix, err.line, err.text, err.source)
    return SubmitError(exc.message + suffix)


def _base_attrs(sub, env, cluster_id: int, qdate: int, owner: str) -> dict[str, str]:
    from jobledger.eventcore.classad.api import quote
    out = {"ClusterId": str(cluster_id), "QDate": str(qdate), "EnteredCurrentStatus": str(qdate),
           "Owner": quote(owner) if owner else "undefined"}
    out.update(_CONSTANT_BASE)
    method = sub.getSubmitMethod()
    if method >= 0:
        out["JobSubmitMethod"] = str(method)
    out["FileSystemDomain"] = quote(env.domain)
    return out


__all__ = ["ClusterPlan", "ClusterStream", "plan_cluster", "stream_cluster", "job_list", "job_source"]
