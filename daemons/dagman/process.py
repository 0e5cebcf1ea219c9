"""condor_dagman: the process that runs one DAG, driven by its nodes' log.

Started by the schedd as a scheduler-universe job (``python -m
daemons.dagman -Dag x.dag ...`` in the DAG's directory, CONDOR_ID and
_CONDOR_SCHEDD_ADDRESS in its environment).  It feeds
``eventcore.dagman.run.DagRun`` with what happens and carries out what it
decides:

* node jobs go to the same schedd, the ready ones of a round in one
  ``submit_many`` (one journal append);
* the shared ``<dag>.nodes.log`` is followed with ``JobEventLog``, woken
  by a file-change notification (``tracking.watch``; the reader's 50 ms
  poll where there is none); a terminated event is acted on as soon as it
  is read, not on a 5 s scan;
* the cluster ids of a chunk's node jobs are reserved just before it is
  built, exactly as many as it has nodes: ids are handed out in submit
  order with no gaps, as HTCondor's DAGMan (each node's condor_submit
  taking the next id) shows them; a long round of submits reads the log
  between its chunks, so a child made ready meanwhile goes out next;
* scripts run as child processes in the node's directory.

Recovery: every start first asks the schedd (queue and history) for the
jobs whose DAGManJobId is this DAGMan job, and adopts the newest cluster of
each node; then it reads the nodes log from the start.  In recovery mode
(the lock file is still there, or -DoRecov), as HTCondor's DAGMan, a submit
event's ``DAG Node: NAME`` also gives that node its job, so a new DAGMan job
for the same DAG runs again nothing the log shows ran; a run that does not
recover starts the nodes log empty, as HTCondor's truncates it.  So a DAGMan
restarted by on_exit_remove after SIGKILL (of itself, of the schedd, of the
whole pool) resubmits nothing that was submitted and loses nothing.  A
submit whose reply was lost (the schedd died) is looked up by its reserved
cluster id before it is sent again.
"""

from __future__ import annotations

import gc
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid

from jobledger.daemons import ipc
from jobledger.daemons.libc import PR_SET_PDEATHSIG, prctl
from jobledger.daemons.config_files import param
from jobledger.daemons.dagman.control import ControlServer, control_path
from jobledger.daemons.dagman.files import DagmanOut, ScriptDebug, extract_rescue_num, newest_rescue, read_bytes, \
    rename_rescues_after, rescue_numbers, write_atomic, write_metrics
from jobledger.daemons.dagman.node_submit import condor_submit_command, node_cluster
from jobledger.daemons.dagman.options import Options
from jobledger.daemons.safe_open import safe_open_fd
from jobledger.daemons.threadnames import name_process
from jobledger.eventcore import adwire
from jobledger.eventcore.dagman import outlines, parse_dag
from jobledger.eventcore.dagman.model import SUBDAG
from jobledger.daemons.daemon import PLATFORM, VERSION
from jobledger.eventcore.dagman.report import (dot_text, jobstate_line, metrics, node_status_text, rescue_name, rescue_text,
                                  status_table)
from jobledger.eventcore.dagman.run import (ABORTED, DAG_ERROR, DONE, FAILED, FUTILE, POST, POST_SCRIPT_TERMINATED, PRE, QUEUED,
                               READY,
                               SUBMIT, TERMINATED, WAITING, DagRun, RemoveJobs, RunScript, SubmitJob)
from jobledger.eventcore.errors import DagError, HTCondorException, HTCondorIOError, JobledgerError, UserLogFileChanged
from jobledger.tracking.jobeventlog import JobEventLog
from jobledger.tracking.watch import DirectoryWatcher

SCHEDD_RETRY = 0.2
SUBMIT_CHUNK = 100      # node jobs per submit_many (one journal append), at most
FIRST_CHUNK = 10
CHUNK_SECONDS = 0.05    # a chunk's build and submit aim at this: the nodes log is read between chunks
PROGRESS_EVERY = 1.0    # seconds between updates of the DAG_* counts in the DAGMan job's ad
PROGRESS_COUNTS = {"DAG_NodesDone": DONE, "DAG_NodesPrerun": PRE, "DAG_NodesQueued": QUEUED,
                   "DAG_NodesPostrun": POST, "DAG_NodesReady": READY, "DAG_NodesFailed": FAILED,
                   "DAG_NodesUnready": WAITING, "DAG_NodesFutile": FUTILE}


SUBMITTED_TO = re.compile(r"(\d+) job\(s\) submitted to cluster (\d+)\.")


def _true(value) -> bool:
    return value if isinstance(value, bool) else str(value).strip().lower() in ("true", "t", "yes", "y", "1")


def inherited(ad: dict, names: list, prefix: str) -> dict[str, str]:
    """What DAGMAN_INHERIT_ATTRS passes on to the node jobs, as HTCondor's DAGMan does: each
    named attribute of the DAGMan job's ad, under DAGMAN_INHERIT_ATTRS_PREFIX's name; a
    sub-DAG's DAGMan (a node of another DAG) reads the prefixed name its parent gave it.
    Attributes the ad lacks are not passed on."""
    lower = {key.lower(): value for key, value in ad.items()}
    nested = "dagmanjobid" in lower
    out = {}
    for name in names:
        found = lower.get((prefix + name if nested else name).lower())
        if found is not None:
            out[prefix + name] = found
    return out


def submit_program() -> str:
    """condor_submit beside this interpreter (the one the pool's commands are), else on PATH."""
    beside = os.path.join(os.path.dirname(sys.executable), "condor_submit")
    return beside if os.access(beside, os.X_OK) else "condor_submit"


def submit_event_node(event) -> str | None:
    """The node a submit event names: its structured notes' DAGNodeName, else ``DAG Node:
    NAME`` in its notes (HTCondor's Dag::LogEventNodeLookup)."""
    notes = event.get("StructuredNotes")            # a ClassAd (or a dict)
    name = notes.get("DAGNodeName") if hasattr(notes, "get") else None
    if isinstance(name, str) and name:
        return name
    text = str(event.get("LogNotes", "") or "")
    if text.startswith("DAG Node: ") and text[10:].split():
        return text[10:].split()[0]
    return None


def _code(event) -> int:
    """A terminated event's result as DAGMan's $RETURN: the exit code, or -1000 - signal."""
    if event.get("TerminatedNormally", True):
        return int(event.get("ReturnValue", 0) or 0)
    return -1000 - int(event.get("TerminatedBySignal", 0) or 0)


def die_with_parent() -> None:
    """DAGMan must not outlive its starter: a starter killed with SIGKILL leaves the job to
    be started again, and two DAGMans must never run one DAG (Linux PR_SET_PDEATHSIG)."""
    prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL))
    if os.getppid() == 1:
        os._exit(1)   # the parent was gone before we asked


class Dagman:
    def __init__(self, options: Options):
        self.options = options
        self.dag_file = options.dag
        self.dagman_id = os.environ.get("CONDOR_ID", "0.0")
        self.cluster = int(self.dagman_id.split(".")[0])
        self.schedd = os.environ.get("_CONDOR_SCHEDD_ADDRESS", "")
        self.out = DagmanOut(os.environ.get("_CONDOR_DAGMAN_LOG", f"{self.dag_file}.dagman.out"),
                             str(param.get("DAGMAN_DEBUG", "") or ""))
        self.nodes_log = os.path.abspath(f"{self.dag_file}.nodes.log")
        self.reader: JobEventLog | None = None
        self.log_changed = threading.Event()
        self.watcher = DirectoryWatcher(self.log_changed.set)
        self.scripts: dict[int, tuple] = {}           # pid -> (Popen, node, kind, ScriptDebug or None)
        self.removed = False
        self.node_status_at = 0.0
        self.start = time.time()
        self.owner = ""
        self.batch = ""
        self.sequence = 0                               # node submits so far (JOBSTATE_LOG)
        self.sequences: dict[str, int] = {}
        self.saved: set[str] = set()                    # SAVE_POINT_FILE nodes already written
        self.published: dict = {}                       # the DAG_* counts last put in our ad
        self.published_at = 0.0
        self.build_seconds = 0.0                        # a node's build and submit took, in the last chunk
        self.built: dict = {}                           # node jobs built this second (node_cluster)
        self.built_at = 0
        self.inherit: dict[str, str] = {}              # DAGMAN_INHERIT_ATTRS: name -> expression
        self.recovering = False                         # reading the nodes log in recovery mode
        self.rescue: str | None = None                  # the rescue DAG this run started from
        self.rescue_num = 0                             # its number (0: none, or not one of ours)
        self.subdag_options: dict = {}                  # what sub-DAGs' DAGMan jobs inherit
        method = options.submit_method
        self.direct = method != 0 if method >= 0 else _true(param.get("DAGMAN_USE_DIRECT_SUBMIT", True))

    # -- start ---------------------------------------------------------------------------
    def _choose_rescue(self) -> None:
        """The rescue DAG this run starts from, as dagman_main.cpp picks it: -RescueFile
        (its number, if it is one of this DAG's, renames the newer ones to ``.old`` and is
        passed to sub-DAGs as -DoRescueFrom), else -DoRescueFrom N (the newer ones renamed),
        else the newest one (AutoRescue)."""
        options, self.rescue, self.rescue_num, said = self.options, None, 0, ""
        if options.rescue_file:
            said, self.rescue = "Rescue DAG file specified", options.rescue_file
            self.rescue_num = extract_rescue_num(options.rescue_file, self.dag_file)
            if self.rescue_num:
                self.out(f"Extracted rescue DAG number: {self.rescue_num}")
            rename_rescues_after(self.dag_file, self.rescue_num, self.out)
            self.subdag_options = {"dorescuefrom": self.rescue_num} if self.rescue_num else {}
        elif not options.force and options.rescue_from > 0:
            self.rescue = newest_rescue(self.dag_file, options.rescue_from)
            self.rescue_num, said = options.rescue_from, f"Rescue DAG number {options.rescue_from} specified"
            rename_rescues_after(self.dag_file, self.rescue_num, self.out)
        elif not options.force:
            self.rescue = newest_rescue(self.dag_file)
            self.rescue_num = rescue_numbers(self.dag_file)[-1] if self.rescue else 0
            said = f"Found rescue DAG number {self.rescue_num}"
        if self.rescue and not options.load_save:
            self.out(f"{said}; running {self.rescue} in combination with normal DAG file")
            self.out("~" * 54)
            self.out(f"USING RESCUE DAG {self.rescue}")

    def load(self) -> DagRun:
        self._choose_rescue()
        if self.options.load_save:        # -load_save: start from a save point file, as from a rescue DAG
            self.rescue = self.save_file_path(self.options.load_save)
            self.out(f"Loading saved progress from {self.rescue}")
        dag = parse_dag(self.dag_file, read_bytes, rescue=self.rescue)
        if self.options.load_save:
            self.out(f"Number of pre-completed nodes: {sum(node.done for node in dag.nodes.values())}")
        self.out(f"Parsing {self.dag_file} ...")
        self.out(f"Dag contains {len(dag.nodes)} total jobs")
        self.check_categories(dag)
        run = DagRun(dag, self.options.throttles)
        run.always_run_post = _true(param.get("DAGMAN_ALWAYS_RUN_POST", False))
        gc.freeze()       # the DAG lives as long as this process: out of the collector's walks
        return run

    def check_categories(self, dag) -> None:
        """Each category's node count and MAXJOBS limit (-1: none), as HTCondor's DAGMan checks
        its category throttles after the parse: a D_TEST line for each, and warnings for a
        category with no nodes or no limit."""
        counts: dict[str, int] = {}
        for node in dag.nodes.values():
            if node.category is not None:
                counts[node.category] = counts.get(node.category, 0) + 1
        for name in sorted(set(counts) | set(dag.max_jobs)):
            limit = dag.max_jobs.get(name, -1)
            self.out.test(f"CHECK CATEGORY {name} {counts.get(name, 0)} {limit}")
            if not counts.get(name):
                self.out(f"Warning: category {name} has no assigned nodes, so the throttle setting "
                         f"({limit}) will have no effect")
            if limit == -1:
                self.out(f"Warning: category {name} has no throttle value set")

    def recover(self, run: DagRun) -> None:
        """Adopt every node job this DAGMan job submitted before (a restart)."""
        rows = self._call("query", constraint=f"DAGManJobId == {self.cluster}",
                          projection=["ClusterId", "DAGNodeName"])
        rows += self._call("history", constraint=f"DAGManJobId == {self.cluster}",
                           projection=["ClusterId", "DAGNodeName"])
        by_node: dict[str, set] = {}
        for ad in rows:
            name = ad.get("DAGNodeName", '""').strip('"')
            if name in run.nodes:
                by_node.setdefault(name, set()).add(int(ad["ClusterId"]))
        for name, clusters in by_node.items():
            run.adopt(name, max(clusters), len(clusters) - 1)
        if by_node:
            self.out(f"The queue and history hold jobs of {len(by_node)} nodes from before")

    def _recovery_mode(self) -> bool:
        """HTCondor's DAGMan recovers when its lock file is still there (it died without
        cleaning up) or when asked (-DoRecov)."""
        if os.path.exists(self.options.lockfile):
            self.out(f"Lock file {self.options.lockfile} detected")
            return True
        if self.options.recovery:
            self.out("Running in recovery mode because -DoRecovery flag was specified")
            return True
        return False

    def _start_nodes_log(self, recovery: bool) -> None:
        """The nodes log is created if missing; a run that does not recover starts it empty
        (HTCondor's DAGMan truncates it), so a recovery later reads this run's events only."""
        try:
            fd = safe_open_fd(self.nodes_log, "ab" if recovery else "wb")
        except OSError as exc:
            raise HTCondorIOError(f"cannot open the nodes log {self.nodes_log}: {exc}") from exc
        os.close(fd)
        if not recovery:
            self.out(f"MultiLogFiles: truncating log file {self.nodes_log}")

    def _recovered_submit(self, run: DagRun, event) -> None:
        """Recovery: a submit event of the nodes log names its node (``DAG Node: NAME``):
        that node's job is this one (as Dag::LogEventNodeLookup reads it)."""
        name = submit_event_node(event)
        if name is None or name not in run.nodes:
            return
        if run.recovered_submit(name, event.cluster):
            return
        self.out(f"Warning: node {name} was submitted ({event.cluster}.{event.proc}.0) "
                 f"while it is {run.nodes[name].status}: ignoring the event")

    def _verify_jobs_in_queue(self, run: DagRun) -> bool:
        """After recovery, every node whose job the log shows submitted and not ended must
        find that job among this DAGMan job's in the schedd (HTCondor's
        Dag::VerifyJobsInQueue).  A job that left the queue since the log was read is in
        the history, its end on its way to the log; one in neither is lost: False."""
        claimed = {name: r.cluster for name, r in run.nodes.items() if r.status == QUEUED and r.cluster is not None}
        if not claimed:
            return True
        self.out(f"{len(claimed)} nodes claim to have jobs submitted to queue. Verifying...")
        constraint = f"DAGManJobId == {self.cluster}"
        known = {int(ad["ClusterId"]) for ad in self._call("query", constraint=constraint, projection=["ClusterId"])}
        missing = {name: cluster for name, cluster in claimed.items() if cluster not in known}
        if missing:
            known |= {int(ad["ClusterId"]) for ad in self._call("history", constraint=constraint,
                                                                   projection=["ClusterId"])}
            missing = {name: cluster for name, cluster in missing.items() if cluster not in known}
        for name, cluster in missing.items():
            self.out(f"ERROR: DAGMan lost track of node {name} (ClusterId={cluster}). "
                     "Please resubmit DAG from produced rescue file.")
        if not missing:
            self.out("All pending job states validated")
        return not missing

    def _remove_all_known(self, run: DagRun, reason: str) -> None:
        for name, node_run in run.nodes.items():
            if node_run.status == QUEUED and node_run.cluster is not None:
                self._remove(RemoveJobs(node_run.cluster, reason))

    def _job_info(self) -> None:
        """Our own job's owner, batch name and the attributes DAGMAN_INHERIT_ATTRS passes on."""
        prefix = str(param.get("DAGMAN_INHERIT_ATTRS_PREFIX", "") or "").strip()
        names = [n for n in re.split(r"[,\s]+", str(param.get("DAGMAN_INHERIT_ATTRS", "") or "")) if n]
        ad = self._call("query", constraint=f"ClusterId == {self.cluster}",
                        projection=["Owner", "JobBatchName", "DAGManJobId"] + names + [prefix + n for n in names])
        if ad:
            self.owner = ad[0].get("Owner", '""').strip('"')
            self.batch = ad[0].get("JobBatchName", '""').strip('"')
            self.inherit = inherited(ad[0], names, prefix)
        if not self.batch:      # none given at submit: HTCondor's DAGMan names it, in its own ad too
            self.batch = f"{os.path.basename(self.dag_file)}+{self.cluster}"
            if ad:
                self._call("edit", attr="JobBatchName", value=adwire.quote(self.batch), ids=[self.dagman_id])

    # -- the loop -----------------------------------------------------------------------------
    def run(self) -> int:
        name_process("dagman")
        die_with_parent()
        for line in outlines.banner(self.dagman_id, os.getpid(), VERSION, PLATFORM, sys.argv[0]):
            self.out(line)
        signal.signal(signal.SIGTERM, self._removed)
        signal.signal(signal.SIGUSR1, self._removed)
        recovery = self._recovery_mode()
        write_atomic(self.options.lockfile, f"{os.getpid()}\n")
        try:
            run = self.load()
        except DagError as exc:           # HTCondor's DAGMan: the parse error, exit status 1
            self.out(f"ERROR: Failed to parse {self.dag_file}: {exc}")
            return self._exit(None, 1)
        except JobledgerError as exc:
            self.out(f"ERROR: {exc}")
            return self._exit(None, 1)
        self._job_info()
        self.jobstate("INTERNAL", "DAGMAN_STARTED", self.dagman_id, run=run)
        self.recover(run)
        self._dot(run, first=True)
        self.control = ControlServer(run, self.out, control_path())
        address = self.control.start()
        self._call("edit", attr="DAGManContact", value=f'"{address}"', ids=[self.dagman_id])
        self._start_nodes_log(recovery)
        self.watcher.add([self.nodes_log])
        self.watcher.start()
        for line in outlines.log_files([self.nodes_log]):
            self.out(line)
        if recovery:
            self.out("Running in RECOVERY mode... >>>>>>>>>>>>>>>>>>>>>>>>>>>>>>")
            self.recovering = True
        self._open_log(run)
        if recovery:
            self.recovering = False
            self.out("...done with RECOVERY mode <<<<<<<<<<<<<<<<<<<<<<<<<<<<<<")
            if not self._verify_jobs_in_queue(run):          # main_shutdown_rescue(EXIT_ERROR, ...)
                run.status = DAG_ERROR
                self._remove_all_known(run, "DAGMan lost track of node jobs")
                self.control.close()
                self.watcher.stop()
                return self._exit(run, 1)
        last_status = 0.0
        while run.exit_code is None:
            if self.removed:
                if self.removed is not True:
                    self.out(f"Received {self.removed}")
                    self.removed = True
                run.remove_all(time.time())
            self._carry_out(run, run.actions(time.time()))
            self._reap_scripts(run)
            self._progress(run)
            if run.exit_code is not None:
                break
            self._follow(run, 0.05 if (self.scripts or run.deferred) else 0.5)
            if time.monotonic() - last_status > 60:
                last_status = time.monotonic()
                self._status(run)
            elif run.dag.node_status_file and \
                    time.monotonic() - self.node_status_at >= run.dag.node_status_file["min_update"]:
                self._node_status(run)
        self._carry_out(run, run.actions(time.time()))
        self.control.close()
        self.watcher.stop()
        return self._exit(run, run.exit_code)

    def _removed(self, signum, _frame):
        if not self.removed:
            self.removed = signal.Signals(signum).name     # said in dagman.out by the loop

    def _carry_out(self, run: DagRun, actions: list) -> None:
        submits = [a for a in actions if isinstance(a, SubmitJob)]
        others = [a for a in actions if not isinstance(a, SubmitJob)]
        for action in submits:
            if action.retry:
                self.out(outlines.retry_line(action.node, action.retry, run.dag.nodes[action.node].retry))
        size = FIRST_CHUNK                    # a few first, so the first children go out early
        while submits:
            self._submit(run, submits[:size])
            # The next chunk as big as is built and sent in about CHUNK_SECONDS at the pace of this
            # one: a child made ready meanwhile waits for one chunk, whatever the machine's load
            submits = submits[size:]
            each = self.build_seconds
            size = max(1, min(SUBMIT_CHUNK, int(CHUNK_SECONDS / each) if each > 0 else SUBMIT_CHUNK))
            if submits:
                # A long round: read what the log got meanwhile, and send the nodes it made
                # ready in a chunk of their own before the rest of the round (a fan-in's
                # child does not wait for the round, nor for 100 others to be built).
                self._follow(run, 0)
                more = run.actions(time.time())
                ready = [a for a in more if isinstance(a, SubmitJob)]
                submits, size = ready + submits, min(len(ready), size) or size
                others += [a for a in more if not isinstance(a, SubmitJob)]
        for action in others:
            if isinstance(action, RunScript):
                self._start_script(run, action)
            elif isinstance(action, RemoveJobs):
                self._remove(action)

    # -- submits ---------------------------------------------------------------------------------
    def _submit(self, run: DagRun, submits: list) -> None:
        """Build the ready nodes' jobs and send them in one append (built again if the
        reserved cluster ids were lost with a schedd restart and taken meanwhile)."""
        if not self.direct:
            for action in submits:
                self._submit_by_condor_submit(run, action)
            self._open_log(run)
            self._dot(run)
            return
        began = time.monotonic()
        while True:
            items, names = self._build(run, submits)
            if not items:
                return
            try:
                if self._submit_many(items):
                    break
            except ValueError as exc:   # the schedd refused the jobs themselves
                self.out("ERROR: submit attempt failed")
                self.out(f"ERROR: the schedd refused node job(s) {' '.join(names)}: {exc}")
                for name in names:
                    run.submit_failed(name, time.time())
                return
            submits = [a for a in submits if a.node in names]
        self.build_seconds = (time.monotonic() - began) / len(items)     # a node's, lately
        for name, item in zip(names, items):
            self._submitted(run, name, item["cluster"], len(item["proc_ads"]))
        self._open_log(run)
        self._dot(run)

    def _submitted(self, run: DagRun, name: str, cluster: int, procs: int) -> None:
        for line in outlines.submit_lines(name, cluster):
            self.out(line)
        run.submitted(name, cluster, procs)
        self.sequence += 1
        self.sequences[name] = self.sequence
        self._save_point(run, name)

    def _submit_by_condor_submit(self, run: DagRun, action: SubmitJob) -> None:
        """Submit node ``name``'s job by running condor_submit (DAGMAN_USE_DIRECT_SUBMIT =
        False or -SubmitMethod 0), reading its cluster from condor_submit's last line, as
        HTCondor's DAGMan does.  A SUBDAG EXTERNAL node's DAGMan job is still submitted
        directly.  A failed run of condor_submit is a failed submit of the node (retried
        as DAGMan retries submits)."""
        name = action.node
        if run.dag.nodes[name].kind == SUBDAG:
            items, names = self._build(run, [action])
            if items and self._submit_many(items):
                self._submitted(run, name, items[0]["cluster"], len(items[0]["proc_ads"]))
            return
        temp = None
        try:
            argv, cwd, temp = condor_submit_command(run.dag, run, name, self.dagman_id, self.batch,
                                                    self.nodes_log, submit_program(), self.inherit)
            done = subprocess.run(argv, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                  timeout=180)
            output = done.stdout + done.stderr
        except (OSError, subprocess.SubprocessError, ValueError) as exc:
            output = f"could not run condor_submit: {exc}"
        finally:
            if temp is not None:
                try:
                    os.unlink(temp)
                except OSError:
                    pass
        found = SUBMITTED_TO.search(output)
        if found is None:
            self.out(f"ERROR: Failed to run condor_submit for node {name}:")
            for line in output.strip().splitlines():
                self.out(line)
            run.submit_failed(name, time.time())
            return
        self._submitted(run, name, int(found.group(2)), int(found.group(1)))

    def _build(self, run: DagRun, submits: list) -> tuple[list, list]:
        items, names = [], []
        ids = self._cluster_ids(len(submits))
        texts: dict = {}                      # the chunk's submit files, each read once
        if int(time.time()) != self.built_at:       # the jobs nodes may share: this second's
            self.built, self.built_at = {}, int(time.time())
        for cluster, action in zip(ids, submits):
            try:
                item = node_cluster(run.dag, run, action.node, cluster, self.dagman_id, self.batch,
                                    self.nodes_log, self.owner, texts, self.inherit, self.subdag_options,
                                    self.built)
            except (JobledgerError, OSError, ValueError) as exc:
                self.out(f"ERROR: submit of node {action.node} failed: {exc}")
                run.submit_failed(action.node, time.time())
                continue
            items.append(item)
            names.append(action.node)
        return items, names

    def _cluster_ids(self, count: int) -> list[int]:
        """``count`` consecutive cluster ids reserved for a chunk about to be built (a
        schedd that restarts meanwhile forgets the reservation and hands none of them
        out again: the chunk is built anew with new ids, ``_submit_many``)."""
        first = self._call("new_cluster", count=count)
        return list(range(first, first + count))

    def _submit_many(self, items: list) -> bool:
        """True once the schedd has the clusters (one append).  A lost reply is sent again
        under the same idempotency token, so the schedd commits it at most once; False if
        the reserved ids went to someone else meanwhile (the caller builds again)."""
        try:
            self._send("submit_many", timeout=300, clusters=items, token=uuid.uuid4().hex)
            return True
        except ValueError as exc:
            if "not reserved" in str(exc):
                return False           # the schedd restarted: every reservation is gone
            raise

    def _send(self, cmd: str, timeout: float = 60, **args):
        """A schedd call sent again while the schedd cannot be reached (a lost reply included:
        callers make it idempotent); a refusal is a ValueError."""
        while True:
            try:
                return ipc.call(self.schedd, cmd, timeout=timeout, **args)
            except HTCondorException as exc:
                if not isinstance(exc, HTCondorIOError) and not str(exc).startswith("cannot reach"):
                    raise ValueError(str(exc)) from None
                self.out(f"{cmd} failed ({exc}); sending it again")
                time.sleep(SCHEDD_RETRY)

    def _remove(self, action: RemoveJobs) -> None:
        self.out(f"Removing cluster {action.cluster}: {action.reason}")
        try:
            self._call("act", action=3, constraint=f"ClusterId == {action.cluster}", reason=action.reason)
        except HTCondorException as exc:
            self.out(f"could not remove cluster {action.cluster}: {exc}")

    def _call(self, cmd: str, **args):
        """A schedd call, retried while the schedd is down (it is restarted by the master)."""
        deadline = time.monotonic() + 600
        while True:
            try:
                if cmd in ("query", "history"):
                    return list(ipc.stream(self.schedd, cmd, timeout=60, **args))
                return ipc.call(self.schedd, cmd, timeout=60, **args)
            except HTCondorException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(SCHEDD_RETRY)

    # -- the nodes log ------------------------------------------------------------------------
    def _open_log(self, run: DagRun) -> None:
        if self.reader is None and os.path.exists(self.nodes_log):
            self.reader = JobEventLog(self.nodes_log)
            self._follow(run, 0)

    def _follow(self, run: DagRun, wait: float) -> None:
        if wait:
            self.out.flush()                   # what this round said, out before we wait
        if self.watcher.watching:
            if wait:
                self.log_changed.wait(wait)    # a write to the nodes log wakes us at once
            self.log_changed.clear()           # (then everything written so far is read)
            wait = 0
        if self.reader is None:
            self._open_log(run)
            if self.reader is None:
                time.sleep(wait)
                return
        try:
            for event in self.reader.events(stop_after=wait):
                number = int(event.type)
                if number == SUBMIT and self.recovering and event.cluster not in run.by_cluster:
                    self._recovered_submit(run, event)
                if number == POST_SCRIPT_TERMINATED:
                    run.post_script_recorded(event.get("DAGNodeName", ""), event.cluster, _code(event), time.time())
                    continue
                code = 0
                if number == TERMINATED:
                    code = _code(event)
                self._say_event(run, event, number, code)
                self._jobstate_event(run, event, number, code)
                run.job_event(event.cluster, event.proc, number, time.time(), code)
                if number in (TERMINATED, ABORTED):
                    # Act on it now: read on only what is already written, then the round ends
                    # (a busy DAG then handles many events per round, an idle one reacts at once).
                    self.reader.events(stop_after=0)
        except UserLogFileChanged as exc:
            self.out(f"ERROR: the nodes log changed under DAGMan: {exc}")
            raise

    def _say_event(self, run: DagRun, event, number: int, code: int) -> None:
        """dagman.out's line for a node job's event (and, at its end, the job's result)."""
        name = run.by_cluster.get(event.cluster)
        when = time.strftime("%m/%d/%y %H:%M:%S", time.localtime(event.timestamp))
        mode = " [recovery mode]" if self.recovering else ""
        if name is None:
            self.out(outlines.event_line(number, None, event.cluster, event.proc, when) + mode)
            return
        self.out(outlines.event_line(number, name, event.cluster, event.proc, when) + mode)
        if number == TERMINATED:
            self.out(outlines.job_result(name, event.cluster, event.proc, code))
        elif number == 12 and event.get("HoldReason"):
            self.out(outlines.hold_reason(str(event["HoldReason"])))

    # -- scripts ---------------------------------------------------------------------------------
    def _start_script(self, run: DagRun, action: RunScript) -> None:
        node = run.dag.nodes[action.node]
        script = node.scripts[action.kind]
        cwd = os.path.abspath(node.directory or ".")
        self.out(outlines.script_running(action.kind, action.node))
        self.jobstate(action.node, f"{action.kind}_SCRIPT_STARTED", run=run)
        argv = list(action.argv)
        local = os.path.join(cwd, argv[0])
        if not os.path.isabs(argv[0]) and os.path.exists(local):
            argv[0] = local          # a script beside the DAG (else found on PATH)
        debug = ScriptDebug(os.path.join(cwd, script.debug_file), script.debug_type, action.node, action.kind,
                            " ".join(action.argv)) if script.debug_file else None
        try:
            child = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL,
                                     stdout=debug.stdout if debug else subprocess.DEVNULL,
                                     stderr=debug.stderr if debug else subprocess.DEVNULL)
        except OSError as exc:
            if debug is not None:
                debug.discard()
            self.out(f"ERROR: {action.kind} script of node {action.node} could not start: {exc}")
            run.script_done(action.node, action.kind, 1, time.time())
            return
        self.scripts[child.pid] = (child, action.node, action.kind, debug)

    def _reap_scripts(self, run: DagRun) -> None:
        for pid, (child, name, kind, debug) in list(self.scripts.items()):
            code = child.poll()
            if code is None:
                continue
            del self.scripts[pid]
            if debug is not None:
                try:
                    debug.write(code)
                except OSError as exc:
                    self.out(f"ERROR: Failed to write {kind} script output for {name} to {debug.path}: {exc}")
            raw, code = code, code if code >= 0 else -1000 + code
            if kind == "POST" and not run.defers(name, kind, code):
                self._record_post(run, name, raw)
            self.out(outlines.script_done(kind, name, code))
            self.jobstate(name, f"{kind}_SCRIPT_{'SUCCESS' if code == 0 else 'FAILURE'}", str(code), run=run)
            run.script_done(name, kind, code, time.time())

    def _record_post(self, run: DagRun, name: str, code: int) -> None:
        """The POST_SCRIPT_TERMINATED event of the node's job, in the journal and so in the nodes
        log, before DAGMan acts on the result: a DAGMan killed after this point does not run
        the script again on recovery; one killed before it does (as HTCondor's)."""
        cluster = run.nodes[name].cluster
        if cluster is None:
            return        # the job was never submitted: nothing names the node in the nodes log
        outcome = {"code": code} if code >= 0 else {"signal": -code}
        try:
            self._send("post_script_terminated", cluster=cluster, node=name, **outcome)
        except ValueError as exc:
            self.out(f"WARNING: the POST script result of node {name} was not recorded: {exc}")

    # -- JOBSTATE_LOG, DOT, SAVE_POINT_FILE ----------------------------------------------------------
    def jobstate(self, node: str, event: str, condor_id: str = "-", run: DagRun | None = None) -> None:
        path = run.dag.jobstate_log if run is not None else None
        if path:
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(jobstate_line(int(time.time()), node, event, condor_id, self.sequences.get(node, 0)))

    def _jobstate_event(self, run: DagRun, event, number: int, code: int) -> None:
        name = run.by_cluster.get(event.cluster)
        words = {0: "SUBMIT", 1: "EXECUTE", 5: "JOB_TERMINATED", 9: "JOB_ABORTED", 12: "JOB_HELD",
                 13: "JOB_RELEASED", 4: "JOB_EVICTED"}
        if name is None or number not in words or not run.dag.jobstate_log:
            return
        self.jobstate(name, words[number], f"{event.cluster}.{event.proc}", run=run)
        if number == TERMINATED:
            self.jobstate(name, "JOB_SUCCESS" if code == 0 else "JOB_FAILURE", str(code), run=run)

    def _dot(self, run: DagRun, first: bool = False) -> None:
        spec = run.dag.dot
        if not spec or not (first or spec["update"]):
            return
        if first and not spec["overwrite"] and os.path.exists(spec["file"]):
            return
        include = ""
        if spec["include"]:
            try:
                include = read_bytes(spec["include"]).decode("utf-8", "replace")
            except OSError as exc:
                self.out(f"WARNING: DOT include file {spec['include']}: {exc}")
        write_atomic(spec["file"], dot_text(run, include))

    def save_file_path(self, name: str) -> str:
        """Where a save point file of this name is: as given when it names a directory (or
        is absolute), else in save_files beside the DAG file (HTCondor's ResolveSaveFile)."""
        if os.path.isabs(name) or "/" in name:
            return name
        return os.path.join(os.path.dirname(self.dag_file) or ".", "save_files", name)

    def _save_point(self, run: DagRun, name: str) -> None:
        """SAVE_POINT_FILE: the first time the node starts, a rescue-format file of the DAG so far."""
        target = run.dag.nodes[name].save_point
        if not target or name in self.saved:
            return
        self.saved.add(name)
        path = self.save_file_path(target)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        if os.path.exists(path):           # an earlier run's: kept as .old, as HTCondor's DAGMan rotates it
            os.replace(path, path + ".old")
        write_atomic(path, rescue_text(run, self.dag_file, time.strftime("%m/%d/%y %H:%M:%S")))
        self.out(f"Wrote save point file {path} for node {name}")

    # -- the end ---------------------------------------------------------------------------------
    def _status(self, run: DagRun) -> None:
        self.out(outlines.dag_status_line(run.status))
        for line in status_table(run):
            self.out(line)
        self._node_status(run)

    def _node_status(self, run: DagRun) -> None:
        """NODE_STATUS_FILE: at start, then every min-update seconds, and at the end."""
        spec = run.dag.node_status_file
        if spec:
            self.node_status_at = time.monotonic()
            write_atomic(spec["file"], node_status_text(run, int(time.time()), (self.dag_file,),
                                                        spec["min_update"], removed=bool(self.removed)))

    def _progress(self, run: DagRun, final: bool = False) -> None:
        """The DAG's counts into our job ad (HTCondor's DAG_NodesTotal, DAG_NodesDone, ...),
        when they changed, at most every PROGRESS_EVERY seconds (and at the end)."""
        now = time.monotonic()
        if not final and now - self.published_at < PROGRESS_EVERY:
            return             # (the counts walk every node: not on every round of a big DAG)
        counts = run.counts()
        values = {name: counts[state] for name, state in PROGRESS_COUNTS.items()}
        values.update(DAG_NodesTotal=len(run.reported()), DAG_Status=int(run.status), DAG_InRecovery=0)
        if values == self.published:
            self.published_at = now
            return
        try:
            ipc.call(self.schedd, "dagman_progress", timeout=10, job=self.dagman_id,
                     values=dict(values, DAG_AdUpdateTime=int(time.time())))
        except HTCondorException as exc:     # the next change tries again
            self.out(f"could not update the DAGMan job's ad: {exc}")
            return
        self.published, self.published_at = values, now

    def _rescue_number(self) -> int:
        """The number of the rescue DAG this run started from, 0 if none (.metrics)."""
        return self.rescue_num

    def _exit(self, run: DagRun | None, code: int) -> int:
        if run is not None:
            self._progress(run, final=True)
            self._status(run)
            # HTCondor writes the rescue DAG as soon as the DAG has failed, before its FINAL
            # node runs (dagman_main.cpp): a FINAL node that succeeds leaves it there
            if run.wants_rescue or code != 0:
                numbers = rescue_numbers(self.dag_file)
                number = (numbers[-1] + 1) if numbers else 1
                path = rescue_name(self.dag_file, number)
                write_atomic(path, rescue_text(run, self.dag_file, time.strftime("%m/%d/%y %H:%M:%S")))
                self.out(f"Writing Rescue DAG file {path}")
            write_metrics(f"{self.dag_file}.metrics", metrics(
                run, dagman_id=self.dagman_id, start=self.start, end=time.time(),
                rescue_number=self._rescue_number(), version=VERSION.split()[1]))
        try:
            os.unlink(self.options.lockfile)
        except FileNotFoundError:
            pass
        if run is not None:
            self._dot(run)
            self.jobstate("INTERNAL", "DAGMAN_FINISHED", str(code), run=run)
        self.out(outlines.exiting(self.dagman_id, os.getpid(), code))
        self.out.close()
        return code
