"""The htcondor2 client classes: ``Schedd``, ``Collector``, ``SubmitResult``.

They talk to the pool's daemons over ``daemons.ipc`` and hand users
``classad.ClassAd`` objects.  Argument checking follows htcondor2
(schedd.md section 3.1, python-api.md sections 2 and 4): wrong types raise
``TypeError``, bad values ``ValueError``, anything the pool refuses or
cannot do ``HTCondorException``.

A submit carries an idempotency token: when the connection drops before the
reply (the schedd killed right after its commit, or restarting), the client
sends it again with the same token until the schedd answers, and gets the
cluster committed the first time; a retried submit never makes a second one.
"""

from __future__ import annotations

import os
import re
import time
import uuid
import warnings

from jobledger.eventcore import adwire
from jobledger.daemons import ipc
from jobledger.daemons.config_files import collector_address, param
from jobledger.eventcore.classad import ClassAd, ExprTree, parse_expr
from jobledger.eventcore.enums import AdType, DaemonType, JobAction, QueryOpt, TransactionFlag
from jobledger.eventcore.enums_v1 import as_v2
from jobledger.eventcore.errors import (ClassAdError, HTCondorEnumError, HTCondorException, HTCondorIOError,
                              HTCondorLocateError, HTCondorReplyError, HTCondorValueError, PermissionDenied,
                              SubmitError)
from jobledger.eventcore.submit.text import MAX_JOBS_PER_SUBMISSION
from jobledger.eventcore.submit.translate import SPOOLED_LEAVE_IN_QUEUE
from jobledger.daemons.client.ocus import OcuMethods
from jobledger.daemons.client.userrecs import UserRecMethods

RETRY_SECONDS = 60.0   # how long a submit keeps trying to reach a restarting schedd
UPLOAD_CHUNK = 2000    # procs per message when a submission is sent in chunks (more than this many)
_ID = re.compile(r"^\s*\d+\.\d+\s*$")
_CLUSTER = re.compile(r"^\s*\d+\s*$")


def to_ad(exprs: dict) -> ClassAd:
    """A ClassAd from the wire form (attribute -> expression text)."""
    return adwire.to_classad(exprs)


def parse_job_spec(spec) -> dict:
    """``{"ids": [...]}`` or ``{"constraint": text}`` for a job_spec (schedd.md 3.1)."""
    if isinstance(spec, bool):
        raise TypeError("job_spec must be a job id, a list of ids, or a constraint")
    if isinstance(spec, int):
        return {"constraint": f"ClusterID == {spec}"}
    if isinstance(spec, ExprTree):
        return {"constraint": str(spec)}
    if isinstance(spec, str):
        if _ID.match(spec):
            return {"ids": [spec.strip()]}
        if _CLUSTER.match(spec):
            return {"constraint": f"ClusterID == {int(spec)}"}
        try:
            parse_expr(spec)
        except ClassAdError:
            raise HTCondorValueError("The job_spec string must be a clusterID[.procID] or the string form "
                             "of an ExprTree.") from None
        return {"constraint": spec}
    if isinstance(spec, (list, tuple)):
        items = [s.strip() if isinstance(s, str) else s for s in spec]
        if not all(isinstance(s, str) and (_ID.match(s) or _CLUSTER.match(s)) for s in items):
            raise HTCondorValueError("job_spec list must hold clusterID or clusterID.procID strings")
        if all(_ID.match(s) for s in items):
            return {"ids": list(items)}
        parts = []
        for s in items:
            if _ID.match(s):
                c, p = s.split(".")
                parts.append(f"(ClusterID == {int(c)} && ProcID == {int(p)})")
            else:
                parts.append(f"(ClusterID == {int(s)})")
        return {"constraint": " || ".join(parts)}
    raise TypeError("job_spec must be a job id, a list of ids, or a constraint")


def job_spec_hack(addr: str, job_spec, f_job_ids, f_constraint, args: list):
    """htcondor2._schedd.job_spec_hack: ``f_job_ids(addr, "C.P, C.P", *args)`` when
    ``job_spec`` names jobs by id only, else ``f_constraint(addr, constraint, *args)``;
    the reading is parse_job_spec's (TypeError, HTCondorValueError)."""
    spec = parse_job_spec(job_spec)
    if "ids" in spec:
        return f_job_ids(addr, ", ".join(spec["ids"]), *args)
    return f_constraint(addr, spec["constraint"], *args)


def _constraint_text(constraint) -> str | None:
    if constraint is None or constraint is True:
        return None
    if isinstance(constraint, ExprTree):
        return str(constraint)
    if isinstance(constraint, str):
        return constraint.strip() or None
    raise TypeError("constraint must be a string or an ExprTree")


def _projection(projection) -> list:
    if projection is None:
        return []
    if not isinstance(projection, list):
        raise TypeError("projection must be a list of attribute names")
    return [str(p) for p in projection]


class SubmitResult:
    """What ``Schedd.submit`` returns: the cluster, its first proc, how many procs."""

    def __init__(self, clusterID: int, procID: int, num_procs: int, clusterAd: ClassAd,
                 spooled_proc_ads=None):
        self._cluster = clusterID
        self._first = procID
        self._num = num_procs
        self._ad = clusterAd
        self._spooled = spooled_proc_ads

    def cluster(self) -> int:
        return self._cluster

    def first_proc(self) -> int:
        return self._first

    def num_procs(self) -> int:
        return self._num

    def clusterad(self) -> ClassAd:
        return self._ad

    def __int__(self) -> int:
        return self._cluster

    def __str__(self) -> str:
        return f"Submitted {self._num} jobs into cluster {self._cluster},{self._first} :\n{self._ad}"

    def __repr__(self) -> str:
        return (f"SubmitResult(cluster={self._cluster}, first_proc={self._first}, "
                f"num_procs={self._num}, clusterad={self._ad!r})")


def local_location(subsystem: str) -> ClassAd | None:
    """The location ad of this machine's daemon ``subsystem`` from its address file
    (``SCHEDD_ADDRESS_FILE``, ...), where HTCondor's tools find a local daemon without a
    collector: None when the file is missing or names no socket that is there."""
    path = param.get(f"{subsystem.upper()}_ADDRESS_FILE")
    if not path:
        return None
    try:
        lines = open(path, encoding="utf-8").read(4096).splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    if not lines:
        return None
    address = lines[0].strip()
    try:
        if not os.path.exists(ipc.socket_path(address)):
            return None
    except HTCondorException:
        return None
    found = re.search(r"\$CondorVersion: (.*?) ?\$", "\n".join(lines[1:]))
    return ClassAd({"MyAddress": address, "CondorVersion": f"$CondorVersion: {found.group(1)} $" if found
                    else version(), "MyType": "Scheduler" if subsystem.upper() == "SCHEDD" else "DaemonMaster"})


class Schedd(UserRecMethods, OcuMethods):
    """A schedd of the pool (htcondor2.Schedd); its User and Project record methods are
    ``daemons.client.userrecs``'s, its OCU methods ``daemons.client.ocus``'."""

    def __init__(self, location: ClassAd | None = None):
        if location is None:
            try:
                location = Collector().locate(DaemonType.Schedd)
            except HTCondorException:     # no collector to ask (DAEMON_LIST without one)
                location = local_location("SCHEDD")
                if location is None:
                    raise
        elif not isinstance(location, ClassAd):
            raise TypeError("location must be a ClassAd")
        self._address = location["MyAddress"]
        self._version = location["CondorVersion"]
        self.location = location

    def _call(self, cmd: str, **args):
        return ipc.call(self._address, cmd, timeout=300, **args)

    def _call_again(self, cmd: str, **args):
        """``_call``, tried again while the schedd cannot be reached or the connection
        drops before the reply (a restarting schedd), for up to ``RETRY_SECONDS``.

        Only for commands that are safe to repeat: ``new_cluster`` (an id more is
        reserved) and the submits, which carry an idempotency token: the schedd
        answers a repeated token with the clusters it committed the first time.
        """
        return self._again(lambda: self._call(cmd, **args))

    @staticmethod
    def _again(send):
        """``send()``, again after a ``ConnectionLost`` for up to ``RETRY_SECONDS``."""
        deadline, delay = time.monotonic() + RETRY_SECONDS, 0.05
        while True:
            try:
                return send()
            except ipc.ConnectionLost:
                if time.monotonic() + delay > deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 1.0)

    def _submit_call(self, cmd: str, chunks=None, **args):
        """A submit (``submit``/``submit_many``) under a new idempotency token.

        ``chunks`` (a function giving the chunks afresh): the procs go as an
        upload, made while they are sent; a retry sends them again from the start.
        """
        token = uuid.uuid4().hex
        if chunks is None:
            return self._call_again(cmd, token=token, **args)
        return self._again(lambda: ipc.call_upload(self._address, cmd, chunks(), timeout=300,
                                                   token=token, **args))

    def __repr__(self) -> str:
        return f"<jobledger.Schedd at {self._address}>"

    # -- submit ---------------------------------------------------------------------
    def submit(self, description, count: int = 0, spool: bool = False, itemdata=None,
               queue: str | None = None, ad_results=None):
        if isinstance(description, ClassAd):
            # v1's signature was submit(ad, count=1, spool=False, ad_results=None): a list
            # in the fourth place is ad_results there.
            if ad_results is None and isinstance(itemdata, list):
                ad_results = itemdata
            return self._submit_ad(description, count or 1, spool, ad_results)
        return self._submit_description(description, count, spool, itemdata, queue)

    def _submit_description(self, description, count, spool, itemdata, queue, progress=None):
        """``submit`` of a Submit; ``progress(sent, total)`` (optional) is told the procs
        sent so far as the chunks of a big cluster go out."""
        from jobledger.daemons.client.factory import factory_request, is_factory
        if itemdata is not None and is_factory(description):
            itemdata = list(itemdata)     # read twice: the jobs, and the factory's items file
        cluster, stream = self._prepare(description, count, itemdata, queue, spool, stacklevel=4)
        factory = factory_request(description, cluster, queue, itemdata)
        extra = {} if factory is None else {"factory": factory}
        if stream.num_procs > UPLOAD_CHUNK:   # sent in chunks, never held whole
            reply = self._submit_call("submit", lambda: _counted(_chunked(stream.procs(), UPLOAD_CHUNK),
                                                                 stream.num_procs, progress),
                                      cluster=cluster, cluster_ad=stream.cluster_attrs,
                                      num_procs=stream.num_procs, **extra)
        else:
            reply = self._submit_call("submit", cluster=cluster, cluster_ad=stream.cluster_attrs,
                                      proc_ads=list(stream.procs()), **extra)
        return SubmitResult(reply["cluster"], reply["first_proc"], reply["num_procs"],
                            to_ad(reply["cluster_ad"]), [] if spool else None)

    def transaction(self, flags=TransactionFlag.Default, continue_txn: bool = False) -> "Transaction":
        """v1: ``with schedd.transaction() as txn: sub.queue(txn, count)``; the clusters
        queued in it are committed together when the block ends, or not at all."""
        return Transaction(self)

    def _prepare(self, description, count, itemdata, queue, spool, stacklevel: int = 3) -> tuple:
        """Reserve a cluster id; its ads, made as they are read (``ClusterStream``)."""
        from jobledger.daemons.client.submit import Submit, build_stream  # the submit language
        if not isinstance(description, Submit):
            raise TypeError("description must be a Submit")
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise TypeError("count must be a non-negative int")
        limit = self.location.get("MaxJobsPerSubmission", MAX_JOBS_PER_SUBMISSION)
        cluster = self._call_again("new_cluster")
        stream = build_stream(description, cluster, count, itemdata, queue, spool, cwd=os.getcwd(),
                              owner=_user(), max_jobs=limit if isinstance(limit, int) else None)
        for message in stream.warnings:
            warnings.warn(message, UserWarning, stacklevel=stacklevel)
        return cluster, stream

    def _submit_ad(self, ad: ClassAd, count: int, spool: bool, ad_results=None) -> int:
        """v1: a raw job ClassAd, ``count`` procs; returns the cluster id (and fills
        ``ad_results`` with the proc ads, as v1 did)."""
        return self._submit_raw(ad, [({}, count)], spool, ad_results)

    def submitMany(self, cluster_ad: ClassAd, proc_ads, spool: bool = False, ad_results=None) -> int:
        """v1: one cluster from ``cluster_ad`` and ``proc_ads``, a list of ``(ClassAd, count)``
        pairs (each ad's attributes over the cluster's, for ``count`` procs); returns the
        cluster id (and fills ``ad_results`` with the proc ads, as v1 did)."""
        if not isinstance(cluster_ad, ClassAd):
            raise TypeError("cluster_ad must be a ClassAd")
        if isinstance(proc_ads, (str, bytes)) or not hasattr(proc_ads, "__iter__"):
            raise TypeError("proc_ads must be a list of (ClassAd, count) pairs")
        procs = []
        for item in proc_ads:
            if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], ClassAd)
                    and isinstance(item[1], int) and not isinstance(item[1], bool)):
                raise TypeError("proc_ads must be a list of (ClassAd, count) pairs")
            if item[1] < 0:
                raise HTCondorValueError("a proc count must not be negative")
            procs.append((adwire.classad_exprs(item[0]), item[1]))
        if not sum(count for _, count in procs):
            raise HTCondorValueError("invalid Queue statement: no jobs")
        return self._submit_raw(cluster_ad, procs, spool, ad_results)

    def _submit_raw(self, ad: ClassAd, procs: list, spool: bool, ad_results) -> int:
        """A cluster of raw ads: ``ad`` (with the defaults v1 added) and, per ``(exprs,
        count)`` of ``procs``, ``count`` procs with those attributes of their own."""
        exprs = adwire.classad_exprs(ad)
        exprs.setdefault("Iwd", adwire.quote(os.getcwd()))
        exprs.setdefault("JobUniverse", "5")
        exprs.setdefault("RequestCpus", "1")
        exprs.setdefault("Requirements", "true")
        if spool:
            exprs.update(JobStatus="5", HoldReasonCode="16", HoldReason='"Spooling input data files"')
            exprs.setdefault("LeaveJobInQueue", SPOOLED_LEAVE_IN_QUEUE)
        own = [dict(proc, ProcId=str(number)) for number, proc in
               enumerate(proc for proc, count in procs for _ in range(count))]
        cluster = self._call_again("new_cluster")
        reply = self._submit_call("submit", cluster=cluster, cluster_ad=exprs, proc_ads=own)
        if isinstance(ad_results, list):
            for proc in own:
                ad_results.append(to_ad(dict(reply["cluster_ad"], **proc)))
        return cluster

    # -- queries --------------------------------------------------------------------
    def query(self, constraint="True", projection=[], callback=None, limit: int = -1,
              opts=QueryOpt.Default) -> list:
        items = query_exprs(self, constraint, projection, limit, opts)
        return _with_callback((to_ad(item) for item in items), callback)

    def xquery(self, requirements="true", projection=[], limit=-1, opts=QueryOpt.Default, name=None,
               constraint=None):
        """v1: a ``QueryIterator`` streaming the job ads from the schedd as it reads
        them (v1's keywords: requirements, projection, limit, opts, name -- the tag
        ``poll`` tells iterators apart by, the schedd's name by default; ``constraint``
        as query names it)."""
        from jobledger.daemons.query_streams import QueryIterator
        chosen = requirements if constraint is None else constraint
        if name is not None and not isinstance(name, str):
            raise TypeError("name must be a string")
        text = _constraint_text(chosen)
        args = {"constraint": None if text is not None and text.lower() == "true" else text,
                "projection": _projection(projection), "limit": int(limit), "opts": int(opts)}
        return QueryIterator(self._address, args, self.location.get("Name", self._address)
                             if name is None else name)

    def history(self, constraint=None, projection=[], match: int = -1, since=None) -> list:
        items = ipc.stream(self._address, "history", timeout=300,
                           **self._history_args(constraint, projection, match, since))
        return [to_ad(item) for item in items]

    def jobEpochHistory(self, constraint=None, projection=[], match: int = -1, since=None,
                        **kwargs) -> list:
        """A record per run attempt of each job (HTCondor's JOB_EPOCH_HISTORY), newest
        first; ``ad_type``: record types (a string, comma-separated, or a list)."""
        items = ipc.stream(self._address, "epoch_history", timeout=300,
                           **self._epoch_args(constraint, projection, match, since, kwargs))
        return [to_ad(item) for item in items]

    def refreshGSIProxy(self, cluster: int, proc: int, proxy_filename: str, lifetime: int = -1) -> int:
        """Replace job ``cluster.proc``'s X.509 proxy (its ``x509userproxy`` file and, while it
        runs, the sandbox's copy) with the file ``proxy_filename``; the seconds the new proxy
        has left.  The proxy is copied as it is (HTCondor's way with
        DELEGATE_JOB_GSI_CREDENTIALS = False): ``lifetime`` does not shorten it."""
        from jobledger.daemons.x509_proxy import MAX_PROXY_BYTES
        for value, what in ((cluster, "cluster"), (proc, "proc"), (lifetime, "lifetime")):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{what} must be an integer")
        if not isinstance(proxy_filename, (str, os.PathLike)):
            raise TypeError("proxy_filename must be a path")
        try:
            with open(proxy_filename, "rb") as handle:
                data = handle.read(MAX_PROXY_BYTES + 1)
        except OSError as exc:
            raise HTCondorException(f"cannot read the proxy {proxy_filename}: {exc.strerror or exc}") from None
        if len(data) > MAX_PROXY_BYTES:
            raise HTCondorException(f"{proxy_filename}: larger than {MAX_PROXY_BYTES} bytes: not a proxy")
        try:
            text = data.decode("ascii")
        except UnicodeDecodeError:
            raise HTCondorException(f"{proxy_filename}: not a PEM file (bytes that are not ASCII)") from None
        expiration = ipc.call(self._address, "refresh_proxy", timeout=60, cluster=cluster, proc=proc, proxy=text)
        return int(expiration) - int(time.time())

    def export_jobs(self, job_spec, export_dir: str, new_spool_dir: str) -> ClassAd:
        """Put the clusters ``job_spec`` selects (ids select their whole cluster) into the
        externally managed state: their ads go to ``<export_dir>/job_queue.log``, each
        job's Iwd under ``new_spool_dir``; a ClassAd says how many (TotalJobAds,
        TotalClusterAds), the Log written and the User."""
        spec = parse_job_spec(job_spec)
        return self._export_call("export_jobs", export_dir=str(export_dir), new_spool_dir=str(new_spool_dir),
                                 **spec)

    def import_exported_job_results(self, import_dir: str) -> ClassAd:
        """Merge back what the external manager changed in ``<import_dir>/job_queue.log``
        and take those jobs out of the externally managed state."""
        return self._export_call("import_exported_job_results", import_dir=str(import_dir))

    def unexport_jobs(self, job_spec) -> ClassAd:
        """Take the exported jobs of the clusters ``job_spec`` selects back, without results."""
        return self._export_call("unexport_jobs", **parse_job_spec(job_spec))

    def _export_call(self, cmd: str, **args) -> ClassAd:
        answer = ipc.call(self._address, cmd, timeout=60, **args)
        return to_ad({name: adwire.literal_text(value) for name, value in answer.items()})

    def get_claims(self, constraint=None, projection=[]) -> list:
        """The slots this schedd holds claims on, as ClassAds (each claimed slot's ad, as
        its startd has it; the claim id is not among them), those ``constraint`` (a
        string or ExprTree; None or empty: all) is true of, with only ``projection``'s
        attributes when it names any."""
        items = ipc.call(self._address, "get_claims", timeout=60, constraint=_constraint_text(constraint),
                         projection=_projection(projection))
        return [to_ad(item) for item in items]

    def daemonHistory(self, constraint=None, projection=[], match: int = -1, since=None) -> list:
        """The schedd's own ads as its daemon history (SCHEDD_DAEMON_HISTORY) recorded them,
        newest first; ``since``: an ExprTree ending the scan at the first record it is true of."""
        if since is not None and not isinstance(since, ExprTree):
            raise TypeError("since must be an ExprTree")
        items = ipc.stream(self._address, "daemon_history", timeout=300, constraint=_constraint_text(constraint),
                           projection=_projection(projection), match=int(match),
                           since=None if since is None else str(since))
        return [to_ad(item) for item in items]

    @classmethod
    def _epoch_args(cls, constraint, projection, match, since, kwargs) -> dict:
        ad_type = kwargs.pop("ad_type", None)
        if kwargs:
            raise TypeError(f"unexpected keyword argument {next(iter(kwargs))!r}")
        if isinstance(ad_type, list):
            ad_type = ",".join(str(name) for name in ad_type)
        elif ad_type is not None and not isinstance(ad_type, str):
            raise TypeError("ad_type must be a list of strings or a string")
        return dict(cls._history_args(constraint, projection, match, since), ad_type=ad_type)

    @staticmethod
    def _history_args(constraint, projection, match, since) -> dict:
        text = _constraint_text(constraint)
        if isinstance(since, bool) or not (since is None or isinstance(since, (int, str, ExprTree))):
            raise TypeError("since must be an int, a 'C.P' string or an ExprTree")
        since_value = str(since) if isinstance(since, ExprTree) else since
        return {"constraint": text, "projection": _projection(projection), "match": int(match),
                "since": since_value}

    def watch(self, constraint=None, since: int = 0):
        """Job events from journal position ``since`` on, of the jobs ``constraint``
        picks, as the schedd commits them: an ``EventStream`` of ``WatchedEvent``s whose
        ``position`` resumes it (``Schedd.watch(c, since=event.position)``), across a
        dropped connection or a schedd restart too (daemons/schedd/watch.py)."""
        from jobledger.daemons.client.watch import EventStream
        if isinstance(since, bool) or not isinstance(since, int):
            raise TypeError("since must be a journal position (an int)")
        if since < 0:
            raise HTCondorValueError("since must be a journal position (an int >= 0)")
        return EventStream(self._address, _constraint_text(constraint), since)

    # -- act / edit ------------------------------------------------------------------
    def act(self, action, job_spec, reason=None) -> ClassAd:
        action = as_v2(action, JobAction)
        if action is None:
            raise TypeError("action must be a JobAction")
        spec = parse_job_spec(job_spec)
        subcode = None
        if reason is None:
            reason = "Python-initiated action"
        elif isinstance(reason, tuple):
            reason, subcode = reason
        elif not isinstance(reason, str):
            raise TypeError("reason must be a string or a (string, int) tuple")
        try:
            result = self._call("act", action=int(action), reason=reason, subcode=subcode, **spec)
        except PermissionDenied:
            raise       # typed: who, which command, which permission
        except HTCondorException as exc:
            raise HTCondorReplyError(f"Error when performing action on the schedd. {exc}") from exc
        return ClassAd({k: int(v) for k, v in result.items()})

    def edit(self, job_spec, attr: str, value, flags=TransactionFlag.Default) -> int:
        flags = as_v2(flags, TransactionFlag)
        if flags is None:
            raise TypeError("flags must be a TransactionFlag")
        if not isinstance(attr, str):
            raise TypeError("attr must be a string")
        text = repr(value) if isinstance(value, ExprTree) else str(value)
        spec = parse_job_spec(job_spec)
        if "ids" in spec:
            for one in spec["ids"]:
                if not _ID.match(one):
                    raise HTCondorValueError("Invalid ID")
        return int(self._call("edit", attr=attr, value=text, flags=int(flags), **spec))

    def reschedule(self) -> None:
        self._call("reschedule")

    def spool(self, result) -> None:
        """Copy the input files of jobs submitted with ``spool=True`` into the
        schedd's spool; the jobs then run from there."""
        if isinstance(result, SubmitResult) and result._spooled is not None:
            ids = [f"{result.cluster()}.{result.first_proc() + i}" for i in range(result.num_procs())]
        elif isinstance(result, list) and all(isinstance(ad, ClassAd) for ad in result):
            ids = [f"{ad['ClusterId']}.{ad['ProcId']}" for ad in result]  # v1: ad_results
        else:
            raise ValueError("result must have come from submit() with spool set")
        if ipc.over_network(self._address):
            self._spool_over_network(ids)
        else:
            self._call("spooled", ids=ids)

    def _spool_over_network(self, ids: list[str]) -> None:
        """The schedd shares no file system with us: the inputs travel in the upload
        (daemons/spool_net.py), read here from the paths the jobs' ads name."""
        from jobledger.daemons import spool_net
        wanted: dict[str, dict | None] = {text.strip(): None for text in ids}
        clusters = sorted({int(text.split(".")[0]) for text in wanted})
        for cluster in clusters:
            for ad in query_exprs(self, f"ClusterId == {cluster}"):
                job = f"{ad.get('ClusterId')}.{ad.get('ProcId')}"
                if job in wanted:
                    wanted[job] = ad
        missing = [job for job, ad in wanted.items() if ad is None]
        if missing:
            raise HTCondorValueError(f"spool: no job {missing[0]} in the queue of {self._address}")
        ads = {job: ad for job, ad in wanted.items() if ad is not None}
        ipc.call_upload(self._address, "spool_upload", spool_net.send_inputs(ads), timeout=300,
                        ids=list(ads))

    def retrieve(self, job_spec) -> None:
        """Copy the spooled output of completed jobs into their submit directories
        (the jobs then leave the queue).  Over the network the files come in the
        reply and are written here (daemons/spool_net.py)."""
        spec = parse_job_spec(job_spec)
        if ipc.over_network(self._address):
            from jobledger.daemons import spool_net
            spool_net.fetch_outputs(ipc.stream(self._address, "retrieve_files", timeout=300, **spec))
        else:
            self._call("retrieve", **spec)


def _chunked(items, size: int):
    """Lists of ``size`` consecutive items (the last may be shorter)."""
    chunk = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _counted(chunks, total: int, progress):
    """The chunks, telling ``progress(sent, total)`` as each is handed on."""
    sent = 0
    for chunk in chunks:
        yield chunk
        sent += len(chunk)
        if progress is not None:
            progress(sent, total)


class Transaction:
    """v1's ``Schedd.transaction()``: clusters queued inside commit together at the end.

    ``Submit.queue(txn, count)`` / ``queue_with_itemdata(txn, ...)`` call
    ``txn.submit``; each gets its cluster id at once, but nothing reaches the
    queue until the ``with`` block ends without an exception -- then all the
    clusters are one journal append.  An exception discards them all.
    """

    def __init__(self, schedd: Schedd):
        self.schedd = schedd
        self.pending: list[dict] = []

    def submit(self, description, count: int = 1, itemdata=None, spool: bool = False) -> SubmitResult:
        from jobledger.daemons.client.api_v1 import v1_submit_error   # a transaction is v1's
        try:
            cluster, stream = self.schedd._prepare(description, count, itemdata, None, spool)
            cluster_ad, proc_ads = stream.cluster_attrs, list(stream.procs())
        except SubmitError as exc:
            raise v1_submit_error(exc) from None
        self.pending.append({"cluster": cluster, "cluster_ad": cluster_ad, "proc_ads": proc_ads})
        return SubmitResult(cluster, 0, len(proc_ads), to_ad(cluster_ad), proc_ads if spool else None)

    def commit(self) -> None:
        pending, self.pending = self.pending, []
        if pending:
            self.schedd._submit_call("submit_many", clusters=pending)

    def abort(self) -> None:
        self.pending = []

    def __enter__(self) -> "Transaction":
        return self

    def __exit__(self, kind, value, traceback) -> None:
        if kind is None:
            self.commit()
        else:
            self.abort()


def query_exprs(schedd: Schedd, constraint="True", projection=(), limit: int = -1,
                opts=QueryOpt.Default):
    """``Schedd.query``'s ads in their wire form (attribute -> expression text), streamed:
    for tools that print a few attributes of many jobs without building ClassAds."""
    text = _constraint_text(constraint)
    if text is not None and text.lower() == "true":
        text = None
    wanted = _projection(list(projection) if isinstance(projection, tuple) else projection)
    return ipc.stream(schedd._address, "query", timeout=300, constraint=text, projection=wanted,
                      limit=int(limit), opts=int(opts))


def _user() -> str:
    import pwd
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return f"uid{os.getuid()}"


def _with_callback(ads, callback) -> list:
    if callback is None:
        return list(ads)
    out = []
    for ad in ads:
        value = callback(ad)
        if value is not None:
            out.append(value)
    return out


class Collector:
    """The pool's collector (htcondor2.Collector)."""

    def __init__(self, pool=None, security=None):
        if pool is None:
            pool = collector_address(param.get)
            self._default = True
        else:
            self._default = False
        if isinstance(pool, ClassAd):
            if "MyAddress" not in pool:
                raise HTCondorValueError("the collector ad has no MyAddress")
            pool = pool["MyAddress"]
        elif isinstance(pool, (list, tuple)):
            pool = ",".join(str(p) for p in pool)
        elif pool is not None and not isinstance(pool, str):
            raise TypeError("pool must be a string, a list of strings or a ClassAd")
        self._address = pool
        self._token = getattr(security, "preferred_token", None)

    def __repr__(self) -> str:
        return f"<jobledger.Collector at {self._address}>"

    def _call(self, cmd: str, **args):
        """``cmd`` at the first collector of the pool that answers (a list is tried in order)."""
        if not self._address:
            raise HTCondorLocateError("no collector: COLLECTOR_HOST is not configured")
        from jobledger.daemons import netclient
        reset = netclient.PREFERRED_TOKEN.set(self._token) if self._token else None
        try:
            addresses = [a.strip() for a in self._address.split(",") if a.strip()]
            for address in addresses[:-1]:
                try:
                    return ipc.call(address, cmd, timeout=60, **args)
                except ipc.ConnectionLost:
                    continue        # the next collector of the list
            return ipc.call(addresses[-1], cmd, timeout=60, **args)
        finally:
            if reset is not None:
                netclient.PREFERRED_TOKEN.reset(reset)

    def query(self, ad_type=AdType.Any, constraint=None, projection=None, statistics=None) -> list:
        ad_type = as_v2(ad_type, AdType)
        if ad_type is None:
            raise TypeError("ad_type must be an AdType")
        ads = self._call("query", ad_type=int(ad_type), constraint=_constraint_text(constraint),
                         projection=_projection(projection))
        return [to_ad(ad) for ad in ads]

    def locate(self, daemon_type, name: str | None = None):
        daemon_type = as_v2(daemon_type, DaemonType)
        if daemon_type is None:
            raise TypeError("daemon_type must be a DaemonType")
        try:
            ads = self._call("locate", daemon_type=int(daemon_type), name=name)
        except HTCondorException as exc:
            if name is None and self._default:
                raise HTCondorLocateError(f"Unable to locate local daemon. ({exc})") from exc
            raise
        if ads:
            return to_ad(ads[0])
        if name is None:
            raise HTCondorLocateError("Unable to locate local daemon.")
        return None

    def locateAll(self, daemon_type) -> list:
        daemon_type = as_v2(daemon_type, DaemonType)
        if daemon_type is None:
            raise TypeError("daemon_type must be a DaemonType")
        return [to_ad(ad) for ad in self._call("locate", daemon_type=int(daemon_type))]

    def advertise(self, ad_list, command: str = "UPDATE_AD_GENERIC", use_tcp: bool = True) -> None:
        if isinstance(ad_list, ClassAd) or not isinstance(ad_list, (list, tuple)):
            raise TypeError("ad_list must be a list of ClassAds")
        if not all(isinstance(ad, ClassAd) for ad in ad_list):
            raise TypeError("ad_list must be a list of ClassAds")
        if str(command).upper() not in COLLECTOR_COMMANDS:   # htcondor2: a ValueError; v1: this class
            raise HTCondorEnumError(f"invalid command {command}")
        self._call("advertise", ads=[adwire.classad_exprs(ad) for ad in ad_list], command=str(command).upper())

    def directQuery(self, daemon_type, name=None, projection=None, statistics=None) -> ClassAd:
        located = self.locate(daemon_type, name)
        if located is None:
            raise HTCondorLocateError("Unable to locate daemon.")
        mytype = located.get("MyType")
        ads = self.query(AdType.from_MyType(mytype) or AdType.Any,
                         f"Name == {adwire.quote(located['Name'])}", projection)
        if not ads:
            raise HTCondorIOError("Unable to query daemon.")
        return ads[0]


# HTCondor's collector commands by name (condor_commands.h; getCollectorCommandNum)
COLLECTOR_COMMANDS = frozenset(
    f"{verb}_{what}" for verb, names in (
        ("UPDATE", ("STARTD_AD", "SCHEDD_AD", "MASTER_AD", "GATEWAY_AD", "CKPT_SRVR_AD", "SUBMITTOR_AD",
                    "COLLECTOR_AD", "LICENSE_AD", "STORAGE_AD", "NEGOTIATOR_AD", "HAD_AD", "AD_GENERIC",
                    "STARTD_AD_WITH_ACK", "XFER_SERVICE_AD", "LEASE_MANAGER_AD", "GRID_AD", "ACCOUNTING_AD",
                    "OWN_SUBMITTOR_AD")),
        ("INVALIDATE", ("STARTD_ADS", "SCHEDD_ADS", "MASTER_ADS", "GATEWAY_ADS", "CKPT_SRVR_ADS",
                        "SUBMITTOR_ADS", "COLLECTOR_ADS", "LICENSE_ADS", "STORAGE_ADS", "NEGOTIATOR_ADS",
                        "HAD_ADS", "ADS_GENERIC", "XFER_SERVICE_ADS", "LEASE_MANAGER_ADS", "GRID_ADS",
                        "ACCOUNTING_ADS")),
        ("MERGE", ("STARTD_AD",)))
    for what in names)


def version() -> str:
    """htcondor2.version(): the HTCondor version string this pool claims."""
    from jobledger.daemons.daemon import VERSION
    return VERSION


def platform() -> str:
    """htcondor2.platform()."""
    from jobledger.daemons.daemon import PLATFORM
    return PLATFORM


def send_command(ad: ClassAd, dc, target: str | None = None) -> None:
    """htcondor2.send_command: deliver a DaemonCommand to the daemon the ad locates.

    Any daemon takes Off* (it shuts down; the master starts it again unless it
    was turned off through the master), Restart and Reconfig; the master also
    takes DaemonsOff* (stop the pool), Restart (restart its daemons) and
    DaemonOff/DaemonOn with a ``target`` daemon.
    """
    from jobledger.eventcore.enums import DaemonCommand
    if not isinstance(ad, ClassAd):
        raise TypeError("ad must be a ClassAd")
    dc = as_v2(dc, DaemonCommand)
    if dc is None:
        raise TypeError("dc must be a DaemonCommand")
    if ad.get("MyAddress") is None:
        raise HTCondorValueError("Address not available in location ClassAd.")
    if ad.get("MyType") is None:
        raise HTCondorValueError("Daemon type not available in location ClassAd.")
    if AdType.from_MyType(ad["MyType"]) is None:
        raise HTCondorValueError("Unknown daemon type.")
    ipc.call(ad["MyAddress"], "command", timeout=30, command=int(dc), target=target)
