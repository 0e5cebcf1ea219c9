"""DAGMan's decisions, as a pure state machine: events in, actions out.

The DAGMan process (``daemons.dagman``) feeds it what happened -- a node's
job was submitted, a job event from the nodes log, a script exited -- and
carries out the actions it returns: submit a node's job, run a script,
remove a cluster.  Time is an argument.  The node lifecycle is HTCondor's:

    WAITING -> READY -> PRE -> QUEUED -> POST -> DONE
                 ^                          |
                 +------ retry -------------+--> FAILED (children FUTILE)

A node succeeds when its POST script exits 0 (or, without one, when every
proc of its job exits 0); PRE_SKIP's exit code makes it DONE at once;
RETRY runs it again (PRE included) unless UNLESS-EXIT matches;
ABORT-DAG-ON stops the DAG.  SERVICE and PROVISIONER nodes go first
(the rest wait until the provisioner's job runs) and are removed at the
end; the FINAL node runs last with $(DAG_STATUS) and $(FAILED_COUNT), and
its result is the DAG's.
"""

from __future__ import annotations

import heapq
from types import MappingProxyType
from typing import Mapping

import attrs

from .nogc import no_cyclic_gc
from .model import FINAL, PROVISIONER, SERVICE, SUBDAG, Dag

WAITING, READY, PRE, QUEUED, POST, DONE, FAILED, FUTILE = (
    "WAITING", "READY", "PRE", "QUEUED", "POST", "DONE", "FAILED", "FUTILE")
# DAG_STATUS values (HTCondor's DagStatus).
DAG_OK, DAG_ERROR, DAG_NODE_FAILED, DAG_ABORT, DAG_RM, DAG_HALTED = 0, 1, 2, 3, 4, 6
# condor_dagman's exit codes; the DAGMan job's on_exit_remove requeues on anything else.
EXIT_OK, EXIT_ERROR, EXIT_ABORT = 0, 1, 2
# Job event numbers the machine follows (ULog numbers).
SUBMIT, EXECUTE, EVICTED, TERMINATED, ABORTED, HELD, RELEASED, POST_SCRIPT_TERMINATED = 0, 1, 4, 5, 9, 12, 13, 16


@attrs.frozen
class Throttles:
    """-maxjobs, -maxidle, -maxpre, -maxpost (0 = no limit), as condor_submit_dag takes them."""
    max_jobs: int = 0
    max_idle: int = 1000
    max_pre: int = 20
    max_post: int = 20
    max_hold: int = 20


@attrs.frozen
class SubmitJob:
    node: str
    retry: int


@attrs.frozen
class RunScript:
    node: str
    kind: str
    argv: tuple


@attrs.frozen
class RemoveJobs:
    cluster: int
    reason: str


class NodeRun:
    """One node's progress (slots, and no dict of procs until its job has one: 10^5 nodes)."""

    __slots__ = ("status", "retry", "cluster", "procs", "code", "pre_code", "result", "waiting_on")

    def __init__(self, status: str = WAITING, waiting_on: int = 0) -> None:
        self.status = status
        self.retry = 0
        self.cluster: int | None = None
        self.procs: Mapping[int, str] = _NO_PROCS    # proc -> "idle" | "running" | "held" | "done"
        self.code = 0                                # the job's result ($RETURN)
        self.pre_code: int | None = None
        self.result: int | None = None               # the node's result (POST's, or the job's)
        self.waiting_on = waiting_on                 # parents not yet DONE

    def __repr__(self) -> str:
        return f"NodeRun({self.status}, retry={self.retry}, cluster={self.cluster}, procs={dict(self.procs)})"


_NO_PROCS: Mapping[int, str] = MappingProxyType({})
JOB_SKIPPED = -1004     # $RETURN of a POST script run after a failed PRE (HTCondor's DAG_ERROR_JOB_SKIPPED)


class DagRun:
    """One DAG's progress.  Feed it events; take ``actions()``; it is over when ``exit_code`` is set."""

    def __init__(self, dag: Dag, throttles: Throttles = Throttles()):
        with no_cyclic_gc():       # 10^5 NodeRuns: the collector would walk the whole DAG again and again
            self._start(dag, throttles)

    def _start(self, dag: Dag, throttles: Throttles) -> None:
        self.dag = dag
        self.throttles = throttles
        self.nodes = {name: NodeRun(DONE if node.done else WAITING, len(node.parents))
                      for name, node in dag.nodes.items()}
        self.by_cluster: dict[int, str] = {}
        self.ready: list = []                      # heap of (-priority, index, name)
        self.index = {name: i for i, name in enumerate(dag.nodes)}
        self.pending: list = []
        self.deferred: list = []                   # heap of (when, name, kind)
        self.running_scripts = {"PRE": 0, "POST": 0, "HOLD": 0}
        self.queued_by_category: dict = {}
        self.queued = 0
        self.queued_special = 0                    # of them SERVICE and PROVISIONER nodes
        self.failed_count = 0                      # nodes FAILED ($FAILED_COUNT)
        self.idle = 0                              # procs of node jobs waiting to run
        self.stopping = False
        self.halted = False                        # DAGMan.halt(): start nothing new
        self.paused = False                        # ... and wait for resume() when idle
        self.status = DAG_OK
        self.always_run_post = False               # DAGMAN_ALWAYS_RUN_POST: a failed PRE runs POST
        self.aborted_with: int | None = None
        self.exit_code: int | None = None
        self.final_started = False
        self._reported: list[str] | None = None
        self._reported_runs: list[NodeRun] | None = None
        self.jobs_submitted = 0                    # node job procs submitted, and left the queue (.metrics)
        self.jobs_completed = 0
        self.exit_before_final: int | None = None  # the exit code the DAG had when FINAL started
        self.provisioned = not dag.of_kind(PROVISIONER)
        runs = self.nodes
        for node in dag.nodes.values():
            if node.done:
                for child in node.children:
                    runs[child].waiting_on -= 1
        for name, node in dag.nodes.items():
            run = runs[name]
            if run.waiting_on == 0 and run.status == WAITING and node.kind != FINAL:
                self._make_ready(name)

    # -- what the DAGMan process tells us ----------------------------------------------
    def adopt(self, name: str, cluster: int, retry: int) -> None:
        """Recovery: the node's job ``cluster`` (attempt ``retry``) is known to the schedd."""
        run = self.nodes[name]
        if run.cluster is not None:
            self.by_cluster.pop(run.cluster, None)
            if run.status == QUEUED:
                self._unqueue(name)
        if run.status == READY:
            self.ready = [item for item in self.ready if item[2] != name]
            heapq.heapify(self.ready)
        self._drop_procs(run)
        run.status, run.retry, run.cluster, run.procs = QUEUED, retry, cluster, {}
        self.by_cluster[cluster] = name
        self._enqueue(name)

    def recovered_submit(self, name: str, cluster: int) -> bool:
        """Recovery from the nodes log: a submit event says node ``name``'s job is ``cluster``.
        A node ready to go (or whose job was an older one) takes it, keeping its retry count;
        False if the node is in no state to have been submitted (the event is ignored)."""
        run = self.nodes[name]
        if run.status == READY or (run.status == QUEUED and run.cluster is not None and cluster > run.cluster):
            self.adopt(name, cluster, run.retry)
            return True
        return run.status == QUEUED and run.cluster is not None and cluster < run.cluster

    def submitted(self, name: str, cluster: int, procs: int) -> None:
        run = self.nodes[name]
        run.cluster = cluster
        for proc in range(procs):
            self._set_proc(run, proc, "idle")
        self.by_cluster[cluster] = name
        self.jobs_submitted += procs

    def submit_failed(self, name: str, now: float) -> None:
        self._finish_job(name, -1, now)

    def job_event(self, cluster: int, proc: int, number: int, now: float, code: int = 0) -> None:
        """A job event of the nodes log (``code``: the exit code of a TERMINATED event)."""
        name = self.by_cluster.get(cluster)
        if name is None or self.nodes[name].status != QUEUED:
            return
        run = self.nodes[name]
        if run.procs.get(proc) == "done":
            return
        if number == SUBMIT:
            if proc not in run.procs:          # a job adopted on recovery
                self._set_proc(run, proc, "idle")
                self.jobs_submitted += 1
        elif number == EXECUTE:
            self._set_proc(run, proc, "running")
            if self.dag.nodes[name].kind == PROVISIONER:
                self.provisioned = True
        elif number in (EVICTED, RELEASED):
            self._set_proc(run, proc, "idle")
        elif number == HELD:
            self._set_proc(run, proc, "held")
            self._script(name, "HOLD", now)
        elif number in (TERMINATED, ABORTED):
            self._set_proc(run, proc, "done")
            self.jobs_completed += 1
            failed = code if number == TERMINATED else -1
            if failed != 0 and run.code == 0:
                run.code = failed
            if all(state == "done" for state in run.procs.values()):
                self._finish_job(name, run.code, now)

    def _set_proc(self, run: NodeRun, proc: int, state: str) -> None:
        self.idle += (state == "idle") - (run.procs.get(proc) == "idle")
        if run.procs is _NO_PROCS:
            run.procs = {}
        assert isinstance(run.procs, dict)
        run.procs[proc] = state

    def _drop_procs(self, run: NodeRun) -> None:
        self.idle -= sum(1 for state in run.procs.values() if state == "idle")
        run.procs = {}

    def defers(self, name: str, kind: str, code: int) -> bool:
        """True if ``code`` is the script's DEFER status (it runs again later)."""
        script = self.dag.nodes[name].scripts[kind]
        return script.defer_status is not None and code == script.defer_status

    def script_done(self, name: str, kind: str, code: int, now: float) -> None:
        self.running_scripts[kind] -= 1
        node, run = self.dag.nodes[name], self.nodes[name]
        if self.defers(name, kind, code):
            heapq.heappush(self.deferred, (now + node.scripts[kind].defer_time, name, kind))
            return
        if kind == "PRE":
            run.pre_code = code
            if node.pre_skip is not None and code == node.pre_skip:
                self._node_done(name, 0, now)
            elif code != 0 and self.always_run_post and "POST" in node.scripts:
                # DAGMAN_ALWAYS_RUN_POST: the job is skipped, the POST script decides the node
                # ($RETURN is DAG_ERROR_JOB_SKIPPED, $PRE_SCRIPT_RETURN the PRE's code)
                run.code, run.status = JOB_SKIPPED, POST
                self._script(name, "POST", now)
            elif code != 0:
                self._node_done(name, code, now)
            else:
                self._submit_or_skip(name, now)
        elif kind == "POST":
            self._node_done(name, code, now)

    def post_script_recorded(self, name: str, cluster: int, code: int, now: float) -> None:
        """A POST_SCRIPT_TERMINATED event of the nodes log: node ``name``'s POST script, run for its
        job ``cluster``, exited with ``code``.  Read back on recovery, it stands for the script: a
        node whose job terminated and whose POST is recorded does not run POST again.  One that
        no longer waits for that POST (done, retried, or this process already took the result)
        ignores it."""
        run = self.nodes.get(name)
        if run is None or run.status != POST or run.cluster != cluster:
            return
        waiting = [a for a in self.pending if isinstance(a, RunScript) and (a.node, a.kind) == (name, "POST")]
        if not waiting:
            return          # the script runs in this process; its own exit decides
        self.pending = [a for a in self.pending if a not in waiting]
        self.script_done(name, "POST", code, now)

    def halt(self, pause: bool = False) -> None:
        """Start nothing new; once nothing runs, exit with a rescue DAG (or, paused, wait)."""
        self.halted, self.paused = True, pause

    def resume(self) -> None:
        self.halted = self.paused = False

    def remove_all(self, now: float) -> None:
        """The DAGMan job was removed: stop, remove every node job, no FINAL."""
        self.status = DAG_RM
        self._stop_everything("DAGMan job removed")
        self.exit_code = EXIT_ABORT

    # -- what to do next ----------------------------------------------------------------
    def actions(self, now: float) -> list:
        """Everything that may start now, under the throttles; empties the list of actions."""
        while self.deferred and self.deferred[0][0] <= now:
            _, name, kind = heapq.heappop(self.deferred)
            self._script(name, kind, now, force=True)
        self._start_ready(now)
        self._check_end(now)
        out, self.pending = self.pending, []
        return out

    def _start_ready(self, now: float) -> None:
        if self.halted and not self.stopping:
            return
        skipped = []
        while self.ready:
            item = heapq.heappop(self.ready)
            name = item[2]
            node = self.dag.nodes[name]
            if not self.provisioned and node.kind not in (PROVISIONER, SERVICE):
                skipped.append(item)
                continue
            if "PRE" in node.scripts and not node.noop:
                if not self._may_script("PRE"):
                    skipped.append(item)
                    break
                self.nodes[name].status = PRE
                self._script(name, "PRE", now)
                continue
            if not self._may_submit(node):
                skipped.append(item)
                if self._throttled_globally():
                    break
                continue
            self._submit_or_skip(name, now)
        for item in skipped:
            heapq.heappush(self.ready, item)

    def _may_script(self, kind: str) -> bool:
        limit = {"PRE": self.throttles.max_pre, "POST": self.throttles.max_post,
                 "HOLD": self.throttles.max_hold}[kind]
        return not limit or self.running_scripts[kind] < limit

    def _throttled_globally(self) -> bool:
        t = self.throttles
        return bool((t.max_jobs and self.queued >= t.max_jobs) or (t.max_idle and self.idle >= t.max_idle))

    def _may_submit(self, node) -> bool:
        if node.noop:
            return True
        if node.kind not in (SERVICE, PROVISIONER) and self._throttled_globally():
            return False
        limit = self.dag.max_jobs.get(node.category) if node.category else None
        return limit is None or limit == 0 or self.queued_by_category.get(node.category, 0) < limit

    def _submit_or_skip(self, name: str, now: float) -> None:
        node, run = self.dag.nodes[name], self.nodes[name]
        if node.noop:
            self._finish_job(name, 0, now, noop=True)
            return
        self._drop_procs(run)
        run.status, run.code = QUEUED, 0
        self._set_proc(run, 0, "idle")    # counts against -maxidle until the submit says how many
        self._enqueue(name)
        self.pending.append(SubmitJob(name, run.retry))

    def _enqueue(self, name: str) -> None:
        category = self.dag.nodes[name].category
        self.queued += 1
        self.queued_special += self.dag.nodes[name].kind in (SERVICE, PROVISIONER)
        if category:
            self.queued_by_category[category] = self.queued_by_category.get(category, 0) + 1

    def _unqueue(self, name: str) -> None:
        category = self.dag.nodes[name].category
        self.queued -= 1
        self.queued_special -= self.dag.nodes[name].kind in (SERVICE, PROVISIONER)
        if category:
            self.queued_by_category[category] -= 1

    def _finish_job(self, name: str, code: int, now: float, noop: bool = False) -> None:
        run = self.nodes[name]
        if not noop:
            self._unqueue(name)
            self.by_cluster.pop(run.cluster, None)
            self._drop_procs(run)
        run.code = code
        if "POST" in self.dag.nodes[name].scripts and not noop:
            run.status = POST
            self._script(name, "POST", now)
        else:
            self._node_done(name, code, now)

    def _script(self, name: str, kind: str, now: float, force: bool = False) -> None:
        node, run = self.dag.nodes[name], self.nodes[name]
        script = node.scripts.get(kind)
        if script is None:
            return
        self.running_scripts[kind] += 1
        self.pending.append(RunScript(name, kind, (script.executable, *(
            self.script_argument(name, arg) for arg in script.arguments))))

    def script_argument(self, name: str, arg: str) -> str:
        """$JOB, $RETRY, $MAX_RETRIES, $RETURN, $PRE_SCRIPT_RETURN, $JOBID, $DAG_STATUS, $FAILED_COUNT."""
        run, node = self.nodes[name], self.dag.nodes[name]
        values = {"$JOB": name, "$RETRY": str(run.retry), "$MAX_RETRIES": str(node.retry),
                  "$RETURN": str(run.code), "$PRE_SCRIPT_RETURN": str(run.pre_code if run.pre_code is not None else -1),
                  "$JOBID": f"{run.cluster}.0" if run.cluster is not None else "",
                  "$DAG_STATUS": str(self.status), "$FAILED_COUNT": str(self.failed_count)}
        for key in sorted(values, key=len, reverse=True):
            arg = arg.replace(key, values[key])
        return arg

    def _node_done(self, name: str, result: int, now: float) -> None:
        node, run = self.dag.nodes[name], self.nodes[name]
        run.result = result
        if result == 0:
            run.status = DONE
            if node.kind == FINAL:
                return
            for child in node.children:
                self.nodes[child].waiting_on -= 1
                if self.nodes[child].waiting_on == 0 and self.nodes[child].status == WAITING:
                    self._make_ready(child)
            return
        if node.abort_on is not None and node.abort_on[0] == result and self.aborted_with is None:
            run.status = FAILED
            self.failed_count += node.kind != SERVICE
            returned = node.abort_on[1]
            self.aborted_with = returned if returned is not None else result
            # dag.cpp CheckForDagAbort: RETURN 0 leaves the DAG's status OK (it then succeeds)
            self.status = DAG_OK if returned == 0 else DAG_ABORT
            self._stop_everything(f"ABORT-DAG-ON node {name} exited with {result}")
            return
        if run.retry < node.retry and node.retry_unless_exit != result and node.kind != FINAL \
                and not self.stopping:
            run.retry += 1
            run.status, run.cluster, run.procs, run.code, run.pre_code = WAITING, None, {}, 0, None
            self._make_ready(name)
            return
        run.status = FAILED
        # As dag.cpp ProcessJobProcEnd: every failed node but a SERVICE node counts ($FAILED_COUNT,
        # and the DAG fails), and any failed node, FINAL and SERVICE included, sets DAG_STATUS 2
        # if it was still OK (Dag::SetStatus).  Not the jobs ABORT-DAG-ON removed in a DAG without
        # FINAL: HTCondor's DAGMan exits at once then and never reads their ends.
        if not (self.aborted_with is not None and self.dag.final is None):
            self.status = DAG_NODE_FAILED if self.status == DAG_OK else self.status
        if node.kind != SERVICE:
            self.failed_count += 1
            self._fail_children(name)

    def _fail_children(self, name: str) -> None:
        """A failed node's children: one by a WEAK edge has its parent ended (it may start);
        the others are futile, and so are all their descendants (weak edges included: a
        futile node never ran), as HTCondor's Node::SetDescendantsToFutile."""
        weak, strong = self.dag.weak, []
        for child in self.dag.nodes[name].children:
            if (name, child) in weak:
                run = self.nodes[child]
                run.waiting_on -= 1
                if run.waiting_on == 0 and run.status == WAITING:
                    self._make_ready(child)
            else:
                strong.append(child)
        self._mark_futile(name, strong)

    def _mark_futile(self, name: str, children: list | None = None) -> None:
        stack = list(self.dag.nodes[name].children if children is None else children)
        while stack:
            child = stack.pop()
            if self.nodes[child].status in (WAITING, READY):
                self.nodes[child].status = FUTILE
                stack += self.dag.nodes[child].children

    def _make_ready(self, name: str) -> None:
        if self.stopping and self.dag.nodes[name].kind != FINAL:
            return
        self.nodes[name].status = READY
        heapq.heappush(self.ready, (-self.dag.nodes[name].priority, self.index[name], name))

    def _stop_everything(self, reason: str) -> None:
        self.stopping = True
        self.ready = []
        for name, run in self.nodes.items():
            if run.status == QUEUED and run.cluster is not None:
                self.pending.append(RemoveJobs(run.cluster, reason))
            if run.status in (WAITING, READY):
                run.status = FUTILE

    def _check_end(self, now: float) -> None:
        """Once nothing can move: remove SERVICE/PROVISIONER jobs, run FINAL, then exit."""
        if self.exit_code is not None:
            return
        # Counters, not a walk over the nodes: this runs on every round of a 10,000-node DAG.
        # PRE and POST nodes have a script running or deferred; READY ones are in the heap.
        running = self.deferred or any(self.running_scripts.values()) or self.queued > self.queued_special
        if self.halted and not self.stopping:
            if running or self.paused:
                return
            # dagman_main.cpp: halted with nothing running, DAGMan shuts down with DAG_STATUS 6
            # (a rescue DAG) and runs the FINAL node first; the ready nodes go back to waiting
            self.status, self.stopping = DAG_HALTED, True
            for item in self.ready:
                self.nodes[item[2]].status = WAITING
            self.ready = []
        if running or self.ready:
            return
        for name in self.dag.nodes:
            if self.dag.nodes[name].kind in (SERVICE, PROVISIONER) and self.nodes[name].status == QUEUED:
                self.pending.append(RemoveJobs(self.nodes[name].cluster, "the DAG is done"))
                self._unqueue(name)
                self.by_cluster.pop(self.nodes[name].cluster, None)
                self.nodes[name].status = DONE
        final = self.dag.final
        if final is not None and not self.final_started and self.nodes[final.name].status != DONE:
            self.final_started = True
            self.exit_before_final = self._exit_code(None)
            self._make_ready(final.name)
            self._start_ready(now)
            return
        if final is not None and self.nodes[final.name].status in (READY, PRE, QUEUED, POST):
            return
        self.exit_code = self._exit_code(final)

    def _exit_code(self, final) -> int:
        """condor_dagman's exit code.  A FINAL node that ran decides it alone (dag.cpp DoneSuccess and
        DoneFailed: its success overrides any failure, ABORT-DAG-ON's RETURN value and a halt
        included; its failure exits 1), as HTCondor's tests job_dagman_final-D/-I/-L and
        job_dagman_abort-final-A/-B expect.  Without one: ABORT-DAG-ON's value, else 1 on a failed
        node or a halt."""
        if final is not None and self.final_started:
            return EXIT_OK if self.nodes[final.name].status == DONE else EXIT_ERROR
        if self.aborted_with is not None:
            return self.aborted_with
        if self.status == DAG_HALTED:
            return EXIT_ERROR
        failed = any(run.status in (FAILED, FUTILE) for name, run in self.nodes.items()
                     if self.dag.nodes[name].kind not in (SERVICE, PROVISIONER))
        return EXIT_ERROR if failed else EXIT_OK

    @property
    def wants_rescue(self) -> bool:
        """A rescue DAG is written when the DAG fails (dagman_main.cpp main_shutdown_rescue with a
        non-zero exit): before a FINAL node runs, so one that then succeeds leaves it; after a
        FINAL node that fails; never on success (ABORT-DAG-ON ... RETURN 0 included)."""
        if self.exit_code is None:
            return False
        return self.exit_code != EXIT_OK or self.exit_before_final not in (None, EXIT_OK)

    def succeeded(self) -> bool:
        """The DAG is over and counts as a success (dag.cpp DoneSuccess(true)): every node done, or
        the FINAL node done, or ABORT-DAG-ON with RETURN 0 (its status left OK)."""
        if self.exit_code is None or self.status == DAG_RM:
            return False
        final = self.dag.final
        if final is not None and self.final_started and self.nodes[final.name].status == DONE:
            return True
        if self.aborted_with is not None:
            return self.status == DAG_OK
        return all(run.status == DONE for name, run in self.nodes.items() if self.dag.nodes[name].kind != SERVICE)

    # -- what the DAGMan process reports ---------------------------------------------------
    def counts(self) -> dict:
        """Nodes in each state; SERVICE nodes are not counted (HTCondor keeps them out of its node
        list, dag.cpp Dag::Add: nor in NodesTotal, DAG_NodesTotal, the status table)."""
        out = dict.fromkeys((WAITING, READY, PRE, QUEUED, POST, DONE, FAILED, FUTILE), 0)
        if self._reported_runs is None:
            self._reported_runs = [self.nodes[name] for name in self.reported()]
        for run in self._reported_runs:
            out[run.status] += 1
        return out

    def reported(self) -> list[str]:
        """The nodes DAGMan's reports show, in DAG order: all but SERVICE nodes."""
        if self._reported is None:
            self._reported = [name for name, node in self.dag.nodes.items() if node.kind != SERVICE]
        return self._reported

    def is_subdag(self, name: str) -> bool:
        return self.dag.nodes[name].kind == SUBDAG
