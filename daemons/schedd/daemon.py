"""condor_schedd's job: own the journal; submit, query, act, edit, history; run jobs.

Every change is a journal append first (``daemons.storage.store.Store``: the queue
and history are folded in the same transaction); user logs follow the
journal through ``daemons.projector.Projector``.  The schedd is made of parts
that get what they need (the store, ``Runs``, a callback asking for a
negotiation cycle), never the schedd itself:

- ``daemons.schedd.runs.Runs``: all claim and run state, under one lock (claims
  being started, outcomes, reconnect after a restart, telling starters);
- ``daemons.schedd.match.Matches``: the negotiator's matches and claim reuse
  become runs;
- ``daemons.schedd.act.Actions``: act, edit, spool, retrieve;
- ``daemons.schedd.query.Queries``: query (ads, summary, groups) and history;
- ``daemons.schedd.policy.Policy``: the periodic policy walk;
- ``daemons.schedd.local.SchedulerUniverse``: jobs the schedd starts itself.

Commands (IPC): ``new_cluster``, ``submit`` / ``submit_many`` (one append
for a v1 transaction), ``query``, ``history`` and ``epoch_history`` (streamed), ``watch`` (a stream of the
journal's job events, daemons.schedd.watch), ``act``,
``edit``, ``spooled``, ``reschedule``; for the negotiator ``idle_by_submitter`` and
``matches``; for starters ``starter_outcome`` and ``starter_update``; for
DAGMan ``post_script_terminated`` and ``dagman_progress`` (``daemons.schedd.dagman``).

Cluster ids: ``new_cluster`` reserves ids for one submitter (DAGMan a chunk of
node jobs' at once); the high-water mark keeps the largest id handed out before the reply,
so a schedd restarted after a crash hands out none of them again.  The old
reservations die with the old schedd: a submit sent again under its token may
take such an id, once; any other submit of an id needs its reservation.
"""

from __future__ import annotations

import pwd
import threading
import time
from concurrent import futures
from concurrent.futures import ThreadPoolExecutor
from functools import partial

from jobledger.eventcore import adwire
from jobledger.daemons import heap, ipc, jobsets, spool
from jobledger.daemons.daemon import Daemon
from jobledger.daemons.schedd.ending import record_end
from jobledger.daemons.projector import Projector
from jobledger.daemons.queuelog_writer import JobQueueLogWriter
from jobledger.daemons.schedd.act import Actions
from jobledger.daemons.daemon_history import MAX_LOG as MAX_DAEMON_LOG
from jobledger.daemons.daemon_history import DaemonHistory
from jobledger.daemons.daemon_history import records as daemon_records
from jobledger.daemons.schedd.epochs import epoch_history
from jobledger.daemons.schedd.watch import watch_stream
from jobledger.daemons.schedd.dagman import dagman_progress, post_script_terminated
from jobledger.daemons.schedd.local import (SCHEDULER, START_LOCAL_UNIVERSE, START_SCHEDULER_UNIVERSE,
                                            SchedulerUniverse, signal_local, start_expression)
from jobledger.daemons.schedd.claims import claimed_slot_ads
from jobledger.daemons.schedd.export import Exports
from jobledger.daemons.schedd.proxy import refresh_proxy
from jobledger.daemons.schedd.usage import UsageStats, local_clock
from jobledger.daemons.schedd.chain import Chains
from jobledger.daemons.schedd.match import MATCH_ATTRS, Matches
from jobledger.daemons.schedd.moves import StartdCalls
from jobledger.daemons.schedd.ocus import Ocus, vacate_fast
from jobledger.daemons.schedd.policy import SYSTEM_EXPRS, Policy
from jobledger.daemons.schedd.query import Queries
from jobledger.eventcore.decide.runs import TRANSFER_LIMITS, input_size_hold
from jobledger.daemons.schedd.runs import Runs
from jobledger.daemons.schedd.userrecs import UserRecs
from jobledger.daemons.schedd.factory import Factories
from jobledger.daemons.schedd.submitters import idle_by_submitter, submitter_counts
from jobledger.daemons.storage.store import Store
from jobledger.eventcore.codecs.journal import decode_payload
from jobledger.eventcore.decide.submit import Submitter, cluster_records
from jobledger.eventcore.errors import HTCondorException, JournalError, PermissionDenied
from jobledger.eventcore.events import EventType
from jobledger.eventcore.enums import AdType
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.projections.ocus import wants
from jobledger.eventcore.records import ClusterAd, ProcAd, ProcBlock
from jobledger.eventcore.status import JobStatus
from jobledger.eventcore.submit.text import MAX_JOBS_PER_SUBMISSION, too_many_jobs
from jobledger.eventcore.transfer import HOLD_MAX_INPUT

HOLD_USER_LOG = 22  # HTCondor's UnableToInitUserLog
HEAP_TRIM = 10.0  # seconds between giving free malloc pages back (daemons.heap)
LOG_WAIT = 30.0   # seconds a query or history waits for the user logs to catch up
LOOKAHEAD_MAX = 16      # jobs one outcome report may have queued behind the starter's last
LOOKAHEAD_WAIT = 60.0   # seconds an outcome report waits for the job to queue behind the last (a startd call)


def user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid{uid}"


def peer_owner(peer: dict) -> str:
    """The Owner a request acts as: the user part of the identity the shared port
    authenticated, else the local user of the socket's peer."""
    if peer.get("user"):
        return str(peer["user"]).partition("@")[0]
    return user_name(peer["uid"])


def peer_key(peer: dict):
    """Who holds a reserved cluster id: the authenticated identity, or the local uid."""
    return peer.get("user") or peer["uid"]


def local_only(peer: dict, command: str) -> str:
    """The Owner of a request that reads or writes the submitter's files where the ad
    names them: on this machine only.  Over the network those paths are the client's,
    not ours, and the files do not travel yet: refused, saying so."""
    if peer.get("user"):
        raise PermissionDenied(str(peer["user"]), f"schedd {command}", "LOCAL",
                               "input and output files do not travel over the network yet: "
                               "spool and retrieve work on the pool's own machine only")
    return peer_owner(peer)


def _export_peer(peer: dict, command: str) -> tuple[str, str] | None:
    """Export, import and a proxy refresh read and write files on this machine: the pool's
    own machine only (as spool and retrieve), the requester's own jobs unless a super user."""
    local_only(peer, command)
    return restricted_to(peer)


def _identity(peer: dict) -> str | None:
    """Who a network request comes from (None: the pool's own user, on its socket)."""
    return str(peer["user"]) if peer.get("user") else None


def restricted_to(peer: dict) -> tuple[str, str] | None:
    """(Owner, identity) a network user's actions are limited to (their own jobs);
    None for the pool's own user and QUEUE_SUPER_USERS."""
    if peer.get("user") and not peer.get("super"):
        return peer_owner(peer), str(peer["user"])
    return None


class Schedd(Daemon):
    name = "schedd"
    log_name = "SchedLog"

    def __init__(self, config_file: str | None = None):
        super().__init__(config_file)
        self.spool_dir.mkdir(parents=True, exist_ok=True)
        self.store: Store | None = None
        self.projector: Projector | None = None
        self.runs: Runs | None = None
        self.queries: Queries | None = None
        self.schedd_name = self.config("SCHEDD_NAME", "") or self.host
        self.reserved: dict[int, int] = {}      # cluster id -> uid that reserved it
        self._token_locks: dict[str, threading.Lock] = {}   # submits under way, by token
        self._cluster_lock = threading.Lock()
        self._next_cluster = 1
        self._cycle_wanted = threading.Event()
        self._holds = ThreadPoolExecutor(max_workers=1, thread_name_prefix="user-log-hold")
        self.reuse_claims = self.config("CLAIM_WORKLIFE", "1200").strip() != "0"
        self.max_jobs_per_submission = self.config_int("MAX_JOBS_PER_SUBMISSION", MAX_JOBS_PER_SUBMISSION)
        self.query_budget = self.config_float("SCHEDD_QUERY_TIMEOUT", 20.0)
        self.use_jobsets = self.config_bool("USE_JOBSETS", False)
        self.start_local = start_expression(self.config("START_LOCAL_UNIVERSE", ""), START_LOCAL_UNIVERSE)

    # -- life ------------------------------------------------------------------------
    def setup(self) -> None:
        heap.limit_arenas()    # before the threads: see daemons.heap
        durability = self.config("JOURNAL_DURABILITY", "group")
        try:   # refuses a journal behind its high-water mark (daemons.storage.evidence)
            self.store = Store(self.local_dir, durability=durability, constraint_filter=_filter)
        except JournalError as exc:
            self.refuse(exc)
        self._next_cluster = max(self.store.next_cluster_id(), 1)
        # Ids an earlier schedd handed out and nobody committed (its reservations died with
        # it): a submit sent again under its token may still take each one, once.
        self._orphans = range(self.store.committed_cluster_max() + 1, self._next_cluster)
        self._orphans_taken: set[int] = set()
        self.projector = Projector(self.store, event_log=self.config("EVENT_LOG", "") or None,
                                   on_refused=self._hold_unlogged)
        self.projector.catch_up()
        queue_log = self.config("JOB_QUEUE_LOG", "")   # empty: not written
        self.queue_log = None
        if queue_log:
            self.store.keep_recent("queuelog")
            self.queue_log = JobQueueLogWriter(self.store.path, queue_log, wait=self.store.wait_for_position,
                                               wake=self.store.wake_waiters, log=self.log,
                                               recent=partial(self.store.recent, follower="queuelog"))
            self.queue_log.catch_up()
        self.queries = Queries(self.store, self.query_budget)
        self.userrecs = UserRecs(self.store, self.host, self.config_bool("ALLOW_SUBMIT_FROM_KNOWN_USERS_ONLY", False))
        self.userrecs.usage = UsageStats(self.store, local_clock(self.config_int("DAILY_STATS_TICK_MIDNIGHT", 0)),
                                         self.start_time)
        self.daemon_history = DaemonHistory(
            self.config("SCHEDD_DAEMON_HISTORY", str(self.spool_dir / "schedd_daemon_history")), "SCHEDD",
            self.config_float("SCHEDD_HISTORY_RECORD_INTERVAL", 900.0),
            self.config_int("MAX_DAEMON_HISTORY_LOG", MAX_DAEMON_LOG), self.log)
        self.startd_calls = StartdCalls(self._startd_call, lambda: self.address_of("startd"), self.log)
        self.runs = Runs(self.store, self.log, self.startd_calls, self.spool_dir, signal_local)
        self.runs.node_ended = self.projector.hurry
        self.matches = Matches(self.store, self.runs, self.log, self.spool_dir, self.reuse_claims)
        self.matches.tell_moved = self.startd_calls.moved
        self.chains = Chains(self.store, self.runs, self.matches, self.log)
        self.matches.may_start = lambda ad: self.userrecs.may_start(ad, self.runs.busy)
        self.actions = Actions(self.store, self.runs, self.spool_dir, self.want_cycle)
        self.actions.left_queue = self.matches.unqueue
        self.exports = Exports(self.store, self.runs.lock, self.log)
        self.ocus = Ocus(self.store, self.userrecs, self.runs, self.matches, self.log, self.startd_calls,
                         lambda: self.located(AdType.Startd), self.address_of("schedd"), self._next_ocu_id,
                         vacate_fast(self.actions), lambda: self.config("OCU_SUPER_USERS", ""),
                         self.want_cycle)
        self.matches.on_ocu = self.ocus.runs_on
        self.policy = Policy(self.store, self.runs, self.log, self.want_cycle,
                             max_releases=self.config_int("SYSTEM_MAX_RELEASES", -1),
                             interval=self.config_float("PERIODIC_EXPR_INTERVAL", 60),
                             ceiling=self.config_float("MAX_PERIODIC_EXPR_INTERVAL", 1200),
                             system={name: self.config(name, "") for name in SYSTEM_EXPRS})
        self.runs.at_exit = self.policy.at_exit
        self.local = SchedulerUniverse(self.store, self.runs, self.log, self.spool_dir,
                                       self.address_of("schedd"), self.config_file,
                                       self.config_float("SCHEDD_RECONNECT_TIMEOUT", 60),
                                       start_expression(self.config("START_SCHEDULER_UNIVERSE", ""),
                                                        START_SCHEDULER_UNIVERSE))
        limits = {param: self.config(param, "-1") for _, param in TRANSFER_LIMITS}
        self.matches.transfer_limits = self.local.transfer_limits = limits
        self.max_input_mb = limits["MAX_TRANSFER_INPUT_MB"].strip()
        self.factories = Factories(self.store, self.spool_dir, self.log, self._cluster_records)
        self.factories.recover()
        self.actions.factories_act = self.factories.act
        self.factories.made = self.local.submitted
        # Before the socket opens: settle what happened while we were away.
        self.runs.reconcile(startup=True)
        self.matches.restore_queued()
        self.runs.kill_unknown_claims()

    def started(self) -> None:
        super().started()
        self.projector.start()
        if self.queue_log is not None:
            self.queue_log.start()
        self.every(1.0, lambda: self.runs.reconcile(), name="reconcile")
        self.every(0.0, self.startd_calls.send_queued, name="claim-moves")
        self.every(HEAP_TRIM, heap.trim, name="heap-trim")
        self.every(self.config_float("PERIODIC_EXPR_INTERVAL", 60), self.policy.run, name="policy")
        self.every(self.config_float("PERIODIC_EXPR_INTERVAL", 60), self._sweep_spool, name="spool")
        self.every(0.0, self._send_cycle_requests, name="poke-negotiator")
        self.every(0.0, self.local.tick, name="scheduler-univ")
        self.every(1.0, self.ocus.tick, name="ocus")
        self.every(0.0, self._factory_tick, name="job-factory")
        self.want_cycle()

    def teardown(self) -> None:
        try:
            self.local.stop()
            self.projector.on_refused = None      # no holds once the pool below is shut
            self._holds.shutdown(wait=True, cancel_futures=True)
            self.matches.stop()
            self.projector.stop()
            self.projector.catch_up()
            self.projector.close()        # saves the cursor
            if self.queue_log is not None:
                try:
                    self.queue_log.stop()
                    self.queue_log.catch_up()
                finally:
                    self.queue_log.close()
        finally:
            self.store.close()            # checkpoints the WAL, whatever failed before

    def ads(self) -> list[dict]:
        ad = self.common_ad("Scheduler", self.schedd_name)
        ad["ScheddIpAddr"] = ad["MyAddress"]
        ad["MaxJobsPerSubmission"] = self.max_jobs_per_submission
        counts = dict.fromkeys(("Idle", "Running", "Held", "Removed", "Completed", "Suspended"), 0)
        for key, number in (self.queries.status_counts() if self.queries is not None else {}).items():
            counts[key] += number
        for key, value in counts.items():
            ad[f"Total{key}Jobs"] = value
        ad["TotalJobAds"] = sum(counts.values())
        submitters = self.submitter_ads(ad)
        ad["NumUsers"] = len(submitters)
        ad["MaxJobsRunning"] = self.config_int("MAX_JOBS_RUNNING", 10000)
        # the START_*_UNIVERSE policies (condor_q -analyze reads them); the local universe's
        # jobs run on slots here, so only its expression is published, not a count
        ad["StartLocalUniverse"] = {"expr": self.start_local}
        local = getattr(self, "local", None)     # (set up with the store)
        if local is not None:
            ad["StartSchedulerUniverse"] = {"expr": local.start_expr}
            ad["TotalSchedulerJobsRunning"] = local.running
        if self.queries is not None:      # started: the ad goes to the daemon history too
            self.daemon_history.maybe_write(ad)
        return [ad] + submitters

    def submitter_ads(self, schedd_ad: dict) -> list[dict]:
        """One Submitter ad per submitter with jobs in the queue (what the negotiator and
        condor_status -submitters read): their idle, running and held jobs.  A submitter
        is a job's AccountingGroup, else its Owner (``daemons.schedd.submitters``)."""
        if self.store is None:
            return []
        ads = []
        for name, counts in sorted(submitter_counts(self.store, self.host).items()):
            ads.append({
                "MyType": "Submitter", "TargetType": "", "Name": name,
                "Owner": counts["Owner"], "User": name, "ScheddName": self.schedd_name,
                "Machine": self.host, "MyAddress": schedd_ad["MyAddress"],
                "ScheddIpAddr": schedd_ad["MyAddress"], "CondorVersion": schedd_ad["CondorVersion"],
                "IdleJobs": counts["Idle"], "RunningJobs": counts["Running"],
                "HeldJobs": counts["Held"], "WeightedIdleJobs": counts["Idle"],
                "WeightedRunningJobs": counts["Running"], "MyCurrentTime": schedd_ad["MyCurrentTime"],
            })
        ocus = getattr(self, "ocus", None)
        held = ocus.submitter_counts(self.host) if ocus is not None else {}
        for ad in ads:      # an unclaimed OCU is idle demand of its owner (HTCondor's fill_submitter_ad)
            counts = held.get(ad["Name"], {})
            ad["IdleJobs"] += counts.get("Unclaimed", 0)
            ad["WeightedIdleJobs"] += counts.get("Unclaimed", 0)
            ad.update({name: counts.get(name, 0) for name in ("OCUClaimsClaimed", "OCUClaimsBorrowed",
                                                              "OCURunningJobs", "OCUWantedJobs")})
        return ads

    def _hold_unlogged(self, jobs: list, path: str, why: str) -> None:
        """Hold the jobs still in the queue whose user log the projector refuses to
        open (a planted symlink), as HTCondor holds a job whose user log it cannot
        initialize (code 22); the projector keeps retrying, a release runs them again."""
        policy = getattr(self, "policy", None)     # None while the schedd sets up: a retry comes
        reason = f"Failed to initialize user log to {path}: {why}"
        for job in jobs:
            if policy is not None and self.store.job_status(job) not in (
                    None, JobStatus.HELD, JobStatus.REMOVED, JobStatus.COMPLETED):
                self._holds.submit(policy.apply, job, ("hold", reason, 0, HOLD_USER_LOG))

    def _startd_call(self, cmd: str, address: str | None = None, **args):
        return ipc.call(address or self.address_of("startd"), cmd, timeout=10, **args)

    def want_cycle(self) -> None:
        """Ask for a negotiation cycle without waiting: the poke thread sends it."""
        self._cycle_wanted.set()

    def _send_cycle_requests(self) -> None:
        """Block until a cycle is wanted, then send one reschedule to the negotiator
        (wishes that arrive meanwhile fold into the next one).  ``poke_negotiator``
        (the daemon's synchronous call) is not overridden here: the last time it was,
        this loop called the override, set the event it had just cleared, and spun."""
        if not self._cycle_wanted.wait(5.0):
            return
        self._cycle_wanted.clear()
        self.poke_negotiator()

    # -- commands ------------------------------------------------------------------------
    def handlers(self) -> dict:
        handlers = super().handlers()
        handlers.update({
            "new_cluster": self._new_cluster,
            "submit": self._submit,
            "submit_many": self._submit_many,
            "query": lambda peer, **a: self._after_logs(self.queries.query(peer_owner(peer), **a)),
            "history": lambda peer, **a: self._after_logs(self.queries.history(**a)),
            "epoch_history": lambda peer, **a: self._after_logs(epoch_history(self.store, **a)),
            "watch": lambda peer, **a: watch_stream(self.store, stop=self.stopping, **a),
            "daemon_history": lambda peer, **a: ipc.Streamed([daemon_records(self.daemon_history.path, **a)]),
            "act": lambda peer, **a: self.actions.act(peer_owner(peer), **a, only=restricted_to(peer)),
            "edit": lambda peer, **a: self.actions.edit(peer_owner(peer), **a, only=restricted_to(peer)),
            "reschedule": lambda peer: self.want_cycle(),
            "spooled": lambda peer, ids: self.actions.spooled(local_only(peer, "spool"), ids),
            "retrieve": lambda peer, **spec: self.actions.retrieve(local_only(peer, "retrieve"), **spec),
            "spool_upload": lambda peer, ids, upload=None: self.actions.spool_upload(
                peer_owner(peer), ids, upload, restricted_to(peer), *self._spool_limits()),
            "retrieve_files": lambda peer, **spec: self.actions.retrieve_files(
                peer_owner(peer), **spec, only=restricted_to(peer)),
            "idle_by_submitter": lambda peer, limit=1000: self._idle_by_submitter(limit),
            "matches": lambda peer, matches: self.matches.matched(self.ocus.matched(matches)),
            "starting": lambda peer, jobs: self.matches.starting(jobs) + self.ocus.starting(jobs),
            "create_ocu": lambda peer, request: self.ocus.create(_identity(peer), bool(peer.get("super")),
                                                                 request),
            "remove_ocu": lambda peer, ocu_id: self.ocus.remove(_identity(peer), bool(peer.get("super")),
                                                                ocu_id),
            "query_ocu": lambda peer, request=None: self.ocus.query(),
            "starter_outcome": self._starter_outcome,
            "starter_lookahead": self._starter_lookahead,
            "post_script_terminated": lambda peer, **a: post_script_terminated(self.store, **a),
            "dagman_progress": lambda peer, **a: dagman_progress(self.store, peer_owner(peer), **a),
            "starter_update": lambda peer, claim, job, image_size_kb, rss_kb:
                self.runs.record_size(JobId.parse(job), claim, image_size_kb, rss_kb),
            "starter_transfer": lambda peer, claim, job, events, input_bytes:
                self.runs.record_input(JobId.parse(job), claim, events, input_bytes),
            "get_claims": lambda peer, constraint=None, projection=None: claimed_slot_ads(
                self.runs.running_jobs(), lambda address: self.startd_calls("slots", address=address),
                constraint, projection, self.log, self.ocus.held()),
            "export_jobs": lambda peer, export_dir, new_spool_dir="##", ids=None, constraint=None:
                self.exports.export(_export_peer(peer, "export_jobs"), export_dir, new_spool_dir, ids, constraint),
            "import_exported_job_results": lambda peer, import_dir:
                self.exports.import_results(_export_peer(peer, "import_exported_job_results"), import_dir),
            "unexport_jobs": lambda peer, ids=None, constraint=None:
                self.exports.unexport(restricted_to(peer), ids, constraint),
            "refresh_proxy": lambda peer, cluster, proc, proxy: refresh_proxy(
                self.store, self.runs.lock, self.startd_calls, self.log, _export_peer(peer, "refresh_proxy"),
                cluster, proc, proxy),
            **self.userrecs.handlers(lambda peer: str(peer["user"]) if peer.get("user") else None),
            "head": lambda peer: self.store.head(),
            "wait_logs": lambda peer, position, timeout=10.0:
                self.projector.wait_for_position(position, timeout),
        })
        return handlers

    def _idle_by_submitter(self, limit: int) -> dict:
        """Each submitter's idle jobs for the negotiator, less those whose owner or project is
        at the MaxJobsRunning of its User or Project record (left out before the ``limit``
        is counted, so a capped project's jobs never crowd out the rest)."""
        busy = self.runs.busy()
        admit = self.userrecs.admitter(busy)
        found = idle_by_submitter(self.store, busy, limit, self.host, MATCH_ATTRS, str(SCHEDULER),
                                  lambda ad: not wants(ad) and (admit is None or admit(ad)))
        for name, requests in self.ocus.requests(self.host).items():   # unclaimed OCUs: idle demand
            found.setdefault(name, []).extend(requests)
        return found

    def _next_ocu_id(self) -> int:
        """An OCU's id: the next cluster id, as HTCondor's schedd numbers them."""
        with self._cluster_lock:
            number = self._next_cluster
            self._next_cluster += 1
            return number

    def _new_cluster(self, peer, count: int = 1) -> int:
        """Reserve ``count`` consecutive cluster ids (DAGMan reserves a round's at once); the first."""
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= 100_000:
            raise ValueError("new_cluster: count must be 1..100000")
        self._check_user(peer)
        with self._cluster_lock:
            cluster = max(self._next_cluster, self.store.next_cluster_id())
            self._next_cluster = cluster + count
            for reserved in range(cluster, cluster + count):
                self.reserved[reserved] = peer_key(peer)
            self.store.reserve_clusters(cluster + count - 1)   # before the reply: kept across a crash
        return cluster

    def _submit(self, peer, cluster: int, cluster_ad: dict, proc_ads: list | None = None,
                token: str | None = None, num_procs: int | None = None, upload=None,
                factory: dict | None = None) -> dict:
        """Commit one cluster: its ad, its procs and their SUBMIT events, in one append.

        The procs come in ``proc_ads``, or (a big submission) as chunks of an
        ``upload`` announcing ``num_procs``: each chunk is journaled as it
        arrives, all in one transaction, so a client gone midway commits nothing.
        ``factory``: a job factory's digest and items (``daemons.schedd.factory``).
        """
        item = {"cluster": cluster, "cluster_ad": cluster_ad, "proc_ads": proc_ads,
                "num_procs": num_procs}
        if factory is None:
            if isinstance(cluster_ad, dict):   # only the factory part names a factory's files
                item["cluster_ad"] = {k: v for k, v in cluster_ad.items()
                                      if k.lower() != "jobmaterializedigestfile"}
            return self._submit_many(peer, [item], token, upload)[0]
        item = self.factories.prepare(item, upload, factory)    # late materialization
        reply = self._submit_many(peer, [item], token, None)[0]
        self.factories.committed(cluster)
        return dict(reply, num_procs=int(reply["cluster_ad"]["TotalSubmitProcs"]))

    def _submit_many(self, peer, clusters: list, token: str | None = None, upload=None) -> list[dict]:
        """Commit clusters in one append (a v1 transaction): all of them or none.

        ``token`` (the client's idempotency token) makes a retried submit safe:
        each cluster ad is journaled with the key ``submit:<token>:<cluster>``,
        and a submit whose token is already in the journal is answered with the
        committed clusters instead of committing them again (an upload's chunks
        are then never asked for).
        """
        if upload is not None and len(clusters) != 1:
            raise ValueError("an upload carries the procs of one cluster")
        if token is None:
            return self._commit_submit(peer, clusters, None, upload)
        with self._cluster_lock:
            lock = self._token_locks.setdefault(token, threading.Lock())
        try:
            with lock:       # the first attempt may still be running when the retry comes
                done = self._committed_submit(peer, clusters, token)
                return done if done is not None else self._commit_submit(peer, clusters, token, upload)
        finally:
            with self._cluster_lock:
                self._token_locks.pop(token, None)

    def _committed_submit(self, peer, clusters: list, token: str) -> list[dict] | None:
        """The replies of a submit already committed under ``token``, or None."""
        replies = []
        for item in clusters:
            row = self.store.keyed(submit_key(token, item["cluster"]))
            if row is None:
                return None
            ad = decode_payload(row.type, row.payload, row.position)["ad"]
            if ad.get("Owner") != adwire.quote(peer_owner(peer)):
                raise HTCondorException(f"cluster {item['cluster']} belongs to another submitter")
            replies.append({"cluster": row.cluster, "first_proc": 0,
                            "num_procs": int(ad["TotalSubmitProcs"]), "cluster_ad": ad,
                            "position": self.store.head()})
        for item in clusters:
            self.reserved.pop(item["cluster"], None)
        return replies

    def _claim_reservation(self, peer, cluster: int, token: str | None) -> None:
        """The submitter must hold ``cluster``.  A retry (``token``) after a schedd
        restart may take an id an earlier schedd reserved (``_orphans``): this one hands
        none of them out again, and each is taken once (never two commits of one id)."""
        with self._cluster_lock:
            owner = self.reserved.pop(cluster, None)
            if owner == peer_key(peer):
                return
            if owner is None and token is not None and cluster in self._orphans \
                    and cluster not in self._orphans_taken:
                self._orphans_taken.add(cluster)
                return
            if owner is not None:
                self.reserved[cluster] = owner
        raise HTCondorException(f"cluster {cluster} was not reserved by this submitter")

    def _check_user(self, peer) -> str:
        """The submitter's User; a disabled one (condor_qusers -disable) may not submit:
        HTCondor's words."""
        user = str(peer["user"]) if peer.get("user") else f"{peer_owner(peer)}@{self.host}"
        refusal = self.userrecs.submit_refusal(user)
        if refusal is not None:
            raise HTCondorException(f"Failed to create new cluster: {refusal}")
        return user

    def _commit_submit(self, peer, clusters: list, token: str | None, upload=None) -> list[dict]:
        now = int(time.time())
        user_records = self.userrecs.submit_records(self._check_user(peer))   # a first submit: the User record
        for item in clusters:     # a disabled project takes no jobs (HTCondor: "suspended")
            ad = item["cluster_ad"]
            refusal = self.userrecs.project_refusal(ad) if isinstance(ad, dict) else None
            if refusal is not None:
                raise HTCondorException(f"Failed to set attribute for job {item['cluster']}.0: {refusal}")
        for item in clusters:
            self._claim_reservation(peer, item["cluster"], token)
        counts = [_proc_count(item, upload) for item in clusters]
        if sum(counts) > self.max_jobs_per_submission:
            raise HTCondorException(too_many_jobs(self.max_jobs_per_submission))
        owner, replies, logged, noted = peer_owner(peer), [], [], list(clusters)
        identity = str(peer["user"]) if peer.get("user") else None

        def chunks():
            for i, (item, count) in enumerate(zip(clusters, counts)):
                cluster = item["cluster"]
                shared, head, build = self._cluster_records(owner, cluster, item["cluster_ad"], count, now,
                                                                  identity)
                if token is not None:
                    head = ClusterAd(cluster, head.ad, key=submit_key(token, cluster))
                replies.append({"cluster": cluster, "first_proc": 0, "num_procs": count,
                                "cluster_ad": shared})
                logged.append("UserLog" in shared)
                yield [*user_records, head] if i == 0 else [head]
                made, local = 0, shared.get("JobUniverse", "").strip() == str(SCHEDULER)
                if upload is not None:   # the scheduler universe's jobs are noted by their ids
                    item = noted[i] = dict(item, proc_ads=[])
                for chunk in (upload if upload is not None else [item["proc_ads"]]):
                    if not isinstance(chunk, list) or made + len(chunk) > count:
                        raise HTCondorException(f"cluster {cluster}: more procs than the {count} announced")
                    made += len(chunk)
                    logged[-1] = logged[-1] or any("UserLog" in ad for ad in chunk if isinstance(ad, dict))
                    records = build(chunk, made - len(chunk))
                    if local and upload is not None:
                        item["proc_ads"].extend({"ProcId": str(proc)} for proc in _procs_of(records))
                    yield records
                if made != count:
                    raise HTCondorException(f"cluster {cluster}: {made} procs came, {count} were announced")
        try:
            if upload is None:     # small: one append, which may share a group commit
                position = self.store.append([record for chunk in chunks() for record in chunk])
            else:
                position = self.store.append_stream(chunks())
        except BaseException:
            with self._cluster_lock:   # nothing committed: the submitter still holds its ids
                for item in clusters:
                    self.reserved[item["cluster"]] = peer_key(peer)
            raise
        self.userrecs.committed(user_records)
        self._hold_big_inputs(replies)
        self.want_cycle()
        self.local.submitted(noted)
        if any(logged):
            # condor_submit returns with the SUBMIT events in the user logs.
            self.projector.wait_for_position(position, 30)
        for reply in replies:
            reply["position"] = position
        return replies

    def _factory_tick(self) -> None:
        """Job factories make their next jobs after each commit (``daemons.schedd.factory``)."""
        self.factories.wait()
        self.factories.tick()

    def _hold_big_inputs(self, replies: list) -> None:
        """Hold the new jobs whose input sandbox is over MAX_TRANSFER_INPUT_MB (or their
        own MaxTransferInputMB), code 32, as HTCondor's schedd does when a submit
        commits: the job is in the queue, held, before the submit returns."""
        pool_limit = self.max_input_mb not in ("", "-1")
        for reply in replies:
            if not pool_limit and "MaxTransferInputMB" not in reply["cluster_ad"]:
                continue
            for proc in range(reply["num_procs"]):
                job = JobId(reply["cluster"], proc)
                ad = self.store.job_ad(job)
                reason = input_size_hold(ad, self.max_input_mb) if ad is not None else None
                if reason is not None:
                    self.policy.apply(job, ("hold", reason, 0, HOLD_MAX_INPUT))

    def _cluster_records(self, owner: str, cluster: int, cluster_ad: dict, num_procs: int,
                         now: int, identity: str | None = None) -> tuple:
        """``eventcore.decide.submit.cluster_records`` for this schedd (job sets numbered
        in its store when USE_JOBSETS is on)."""
        who = Submitter(owner, identity, self.host, self.schedd_name, self.address_of("schedd"))
        numbered = None
        if self.use_jobsets:
            def numbered(set_name: str) -> int:
                return jobsets.jobset_id(self.store, owner, set_name, cluster)
        return cluster_records(who, cluster, cluster_ad, num_procs, now, numbered)

    def _after_logs(self, answer):
        """``answer`` (just read from the queue or the history) once the user logs hold
        every event up to the journal head read after it.  As in HTCondor, a job is gone
        from a query, and in the history, only once its events up to its leaving (the
        terminal one) are in its user log -- or the log's failure is recorded
        (``Projector.failures``): the journal stays the one source, the answer waits.
        A streamed answer read page by page waits so after each page it reads."""
        if isinstance(answer, ipc.Streamed):
            return ipc.Streamed(self._each_after_logs(answer.batches))
        return self._logs_hold_head(answer)

    def _each_after_logs(self, batches):
        for batch in batches:
            yield self._logs_hold_head(batch)
        self._logs_hold_head(None)    # and at the end: a job an empty answer shows gone

    def _logs_hold_head(self, answer):
        try:
            caught_up = self.projector.wait_for_position(self.store.head(), LOG_WAIT)
        except Exception as exc:  # noqa: BLE001 - the projector keeps it for stop(); answer anyway
            self.log.error("user logs stopped following the journal: %r", exc)
            return answer
        if not caught_up:
            self.log.info("user logs are more than %ss behind the journal; answering anyway",
                          LOG_WAIT)
        return answer

    def _spool_limits(self) -> tuple[int, int]:
        """(bytes, files) one network spool may bring: NET_MAX_SPOOL_MB (and
        MAX_TRANSFER_INPUT_MB when that is a plain number), NET_MAX_SPOOL_FILES."""
        megabytes = self.config_int("NET_MAX_SPOOL_MB", 1024)
        try:
            pool_limit = float(self.max_input_mb)
        except ValueError:
            pool_limit = -1     # an expression of the job's: applied when it runs
        if pool_limit >= 0:
            megabytes = min(megabytes, int(pool_limit))
        return megabytes << 20, self.config_int("NET_MAX_SPOOL_FILES", 10000)

    def _sweep_spool(self) -> None:
        """Spooled files of jobs that have left the queue go too."""
        spool.sweep(self.spool_dir, lambda job: self.store.job_status(job) is not None)

    # -- starters ---------------------------------------------------------------------------
    def _starter_outcome(self, peer, claim: str, job: str, outcome: dict, more: bool = False,
                         lookahead: dict | None = None, direct: bool = False, chain: list | None = None):
        # No negotiation here: the slot is free only once the starter exits, and the
        # startd asks for a cycle then (that also covers a requeued job).  Meanwhile the
        # claim is offered to the next job of the same kind, while the outcome is being
        # committed (the job is over whatever the journal decides about this report).
        # The starter is answered after that handover: one that offered to run the next
        # job (``more``) gets it in the answer; one that exits leaves no slot free that
        # the startd would see (no negotiation cycle per job).
        # The run's end and the next run's start go into one commit (daemons.joint_commit).
        # A starter that queues jobs behind the one it runs (``lookahead``) gets the next of
        # those in the same answer: ``_lookahead_after``, in a worker once the handover
        # named the next job, while this thread commits.  A plain starter (``direct``) gets
        # its next job without the startd being asked: it is told after (daemons.schedd.moves);
        # this thread finds that job and offers its records, no worker between.
        # A ``chain`` of the queued jobs that ended too goes into the same commit
        # (daemons.schedd.chain).
        job_id = JobId.parse(job)
        queued: futures.Future | None = None

        def ahead(handover: futures.Future | None) -> None:
            nonlocal queued
            if more and lookahead is not None and handover is not None:
                queued = futures.Future()
                handover.add_done_callback(lambda done: self._lookahead_when(done, lookahead, queued))
        chained = self.chains.record(job_id, claim, outcome, chain, ahead) if more and chain else None
        if chained is None:
            result, handover = record_end(self.store, self.runs, self.matches, job_id, claim, outcome,
                                          more, direct is True, ahead)
        else:
            result, handover, chained = chained
        following = None
        if handover is not None:
            futures.wait([handover], timeout=None if more else 10)
            following = handover.result() if more else None
        if following is None and result == "recorded":
            self._ended_last()
        if not more:
            return result
        answer = {"result": result, "next": following}
        if chain:
            answer["chained"] = chained or 0
        if queued is not None and following is not None:
            try:
                answer["queued"] = queued.result(timeout=LOOKAHEAD_WAIT)
            except futures.TimeoutError:
                answer["queued"] = None   # (its queued claim is handed over as a next job then)
        return answer

    def _ended_last(self) -> None:
        """A run ended and its claim went to no next job: if that leaves no job idle or
        running (the last of a stream), its events go to the user logs now
        (``Projector.drained``), not at the end of the projector's gathering window."""
        counts = self.store.status_counts()
        if not any(counts.get(int(status)) for status in LIVE_STATUSES):
            self.projector.drained()

    def _starter_lookahead(self, peer, claim: str, job: str, count: int | None = None) -> dict | list | None:
        """The next job to queue behind ``job`` (run or queued under ``claim``) by its
        starter, or None; with a ``count``, a list of up to that many (LOOKAHEAD_MAX at
        most), each queued behind the one before: a starter filling its queue asks once."""
        if count is None:
            return self.matches.lookahead(JobId.parse(job), claim)
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise HTCondorException(f"starter_lookahead: count must be a whole number of jobs, 1 or more, "
                                    f"not {count!r}")
        return self.matches.lookahead_many(JobId.parse(job), claim, min(count, LOOKAHEAD_MAX))

    def _lookahead_when(self, handover: futures.Future, lookahead: dict, queued: futures.Future) -> None:
        """(The handover's callback.)  ``queued`` gets the job to queue behind the
        starter's last, looked for in a worker, once ``handover`` named the next job."""
        following = None if handover.cancelled() or handover.exception() else handover.result()
        if following is None:
            queued.set_result(None)
            return

        def look() -> None:
            try:
                queued.set_result(self._lookahead_after(following, lookahead))
            except Exception as exc:  # noqa: BLE001 - nothing queued: the starter asks later
                self.log.info("no job queued behind %s: %r", lookahead, exc)
                queued.set_result(None)
        try:
            self.matches.in_worker(look)
        except RuntimeError:           # stopping: no worker takes it
            queued.set_result(None)

    def _lookahead_after(self, following: dict, lookahead: dict) -> dict | list | None:
        """The job to queue behind the last one the starter holds, as ``starter_lookahead``
        gives it: behind ``lookahead``'s ``claim`` and ``job`` (the last queued), or, with
        none, behind ``following`` itself; none when the handover named another job than
        the ``expect``ed first queued one (the starter cancels its queue then).  With a
        ``count``, a list of up to that many, each queued behind the one before."""
        expect = lookahead.get("expect")
        count = lookahead.get("count")
        several = isinstance(count, int) and not isinstance(count, bool)
        if expect is not None and following.get("claim") != expect:
            return [] if several else None
        ahead_claim, ahead_job = lookahead.get("claim"), lookahead.get("job")
        if not isinstance(ahead_claim, str) or not isinstance(ahead_job, str):
            values = following.get("job") or {}
            ahead_claim = following.get("claim")
            ahead_job = f"{values.get('ClusterId')}.{values.get('ProcId')}"
        try:
            if several:
                return self.matches.lookahead_many(JobId.parse(ahead_job), ahead_claim,
                                                   min(max(count, 1), LOOKAHEAD_MAX))
            return self.matches.lookahead(JobId.parse(ahead_job), ahead_claim)
        except (ValueError, TypeError):
            return [] if several else None


# a job in one of these will write another event (its start, its end) without a command
LIVE_STATUSES = (JobStatus.IDLE, JobStatus.RUNNING, JobStatus.SUSPENDED, JobStatus.TRANSFERRING_OUTPUT)


def _procs_of(records: list) -> list[int]:
    """The proc ids a chunk's records submit (a block's, or one per proc record)."""
    if len(records) == 1 and isinstance(records[0], ProcBlock):
        return list(records[0].procs)
    return [r.job.proc for r in records if isinstance(r, ProcAd)]


def _proc_count(item: dict, upload) -> int:
    """How many procs a submitted cluster has (an upload announces it)."""
    if upload is None:
        return len(item["proc_ads"])
    count = item.get("num_procs")
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError("an upload must announce num_procs, a positive int")
    return count


def submit_key(token: str, cluster: int) -> str:
    """The journal key of a cluster ad submitted under an idempotency token."""
    return f"submit:{token}:{cluster}"


def _filter(text: str):
    """Constraint predicate over ads of expression text (the store's hook)."""
    return adwire.ConstraintTest(text)

