"""The scheduler universe: jobs the schedd starts itself, on its own machine.

HTCondor runs a scheduler-universe job (DAGMan is one) as a local process
of the schedd, never matched to a slot.  Here the schedd starts a starter
(``daemons.starter``, the same one the startd forks) as its own process:
a schedd killed with SIGKILL leaves the job running, and
the restarted schedd reconnects to it through the journal's StarterPid /
StarterStart exactly as for a startd's job (``daemons.schedd.runs``).  The
outcome comes back through ``starter_outcome``, so OnExitRemove (HTCondor's
way of restarting DAGMan) and the events are the ordinary ones.

The starter watches the master's lifeline (not the schedd's): a pool whose
master dies takes the job down with it, as it does every other process.

The job gets ``CONDOR_ID`` (cluster.proc), ``CONDOR_CONFIG`` and
``_CONDOR_SCHEDD_ADDRESS`` in its environment, as condor_dagman does.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time

from jobledger.daemons.daemon import LIFELINE_ENV, alive, process_start_time
from jobledger.daemons.starter import SIGNALS, Starter
from jobledger.eventcore import adwire
from jobledger.eventcore.claims import ClaimEvent
from jobledger.eventcore.decide.runs import event, first_start_attrs, starter_job, with_transfer_limits
from jobledger.eventcore.errors import InvalidTransition
from jobledger.eventcore.events import EventType
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.records import Assumed, Record, SetAttributes
from jobledger.daemons.storage.interfaces import JobLedger

SCHEDULER = 7      # JobUniverse of the scheduler universe
LOCAL_SLOT = "local"
# HTCondor's defaults (param_info.in), also what a START_*_UNIVERSE that does not parse gives
START_SCHEDULER_UNIVERSE = "TotalSchedulerJobsRunning < 500"
START_LOCAL_UNIVERSE = "TotalLocalJobsRunning < 200"


def start_expression(text: str | None, default: str) -> str:
    """A START_*_UNIVERSE setting, or HTCondor's default when it is unset or no expression."""
    text = (text or "").strip()
    if not text:
        return default
    try:
        adwire.check_constraint(text)
    except Exception:  # noqa: BLE001 - any parse failure: HTCondor falls back to its default
        return default
    return text


class SchedulerUniverse:
    """Starts idle scheduler-universe jobs; signals and reaps their starters."""

    def __init__(self, store: JobLedger, runs, log, spool_dir, schedd_address: str, config_file: str,
                 reconnect_timeout: float, start_expr: str = START_SCHEDULER_UNIVERSE):
        self.store = store
        self.start_expr = start_expr      # START_SCHEDULER_UNIVERSE: may a job start now
        self.running = 0                  # TotalSchedulerJobsRunning, as of the last round
        self.runs = runs
        self.log = log
        self.schedd_address = schedd_address
        self.config_file = config_file
        self.reconnect_timeout = reconnect_timeout
        self.execute_dir = spool_dir / "local_univ_execute"
        self.execute_dir.mkdir(parents=True, exist_ok=True)
        self.wake = threading.Event()
        self.transfer_limits: dict = {}     # MAX_TRANSFER_*_MB (the schedd sets them)
        self.children: dict[int, subprocess.Popen] = {}
        # The scheduler-universe jobs in the queue: looked at one by one (by key) each
        # round, so a large queue of other jobs costs nothing here.
        self.known = {JobId(int(ad["ClusterId"]), int(ad["ProcId"]))
                      for ad in store.query(f"JobUniverse == {SCHEDULER}", ["ClusterId", "ProcId"])}

    def submitted(self, clusters: list) -> None:
        """New clusters were committed: note their scheduler-universe jobs and wake up."""
        for item in clusters:
            if item["cluster_ad"].get("JobUniverse", "").strip() == str(SCHEDULER):
                self.known.update(JobId(item["cluster"], int(ad.get("ProcId", i)))
                                  for i, ad in enumerate(item["proc_ads"]))
                self.wake.set()

    def tick(self) -> None:
        """Reap finished starters, then start every idle scheduler-universe job."""
        self.wake.wait(1.0)
        self.wake.clear()
        for pid, child in list(self.children.items()):
            if child.poll() is not None:
                del self.children[pid]
        ads = {}        # job -> (its ad, its JobStatus)
        for job in sorted(self.known):
            ad = self.store.job_ad(job)
            if ad is None:
                self.known.discard(job)
            else:
                ads[job] = (ad, adwire.evaluate(ad, "JobStatus"))
        self.running = sum(1 for _, status in ads.values() if status == 2)
        for job, (ad, status) in ads.items():
            if status != 1 or not self.may_start(ad):
                continue
            with self.runs.starting(job) as claim:
                if claim is None:
                    continue
                try:
                    if self._start(job, claim) is not None:
                        self.running += 1
                except (OSError, InvalidTransition) as exc:
                    self.log.info("scheduler universe job %s: could not start: %s", job, exc)

    def policy_attrs(self) -> dict:
        """What the schedd's ad says of this universe (and what ``may_start`` reads)."""
        return {"StartSchedulerUniverse": self.start_expr, "TotalSchedulerJobsRunning": str(self.running)}

    def may_start(self, job: dict) -> bool:
        """START_SCHEDULER_UNIVERSE against the job, as HTCondor's schedd evaluates it
        before starting one: only true starts it (undefined or an error does not)."""
        return adwire.evaluate_against(self.policy_attrs(), "StartSchedulerUniverse", job) is True

    def _start(self, job: JobId, claim: str) -> subprocess.Popen | None:
        """Start ``job``'s starter and record its run; the starter (None if not started)."""
        current = self.store.job_ad(job)
        if current is None or adwire.evaluate(current, "JobStatus") != 1:
            return None
        spec = with_transfer_limits(starter_job(current), current, self.transfer_limits)
        extra = {"CONDOR_ID": str(job), "CONDOR_CONFIG": self.config_file,
                 "_CONDOR_SCHEDD_ADDRESS": self.schedd_address}
        spec["Environment"] = " ".join(filter(None, [spec.get("Environment") or "", *(
            shlex.quote(f"{k}={v}") for k, v in extra.items())]))
        # The master's lifeline: the job outlives a schedd crash, not the whole pool's.
        lifeline = os.environ.get(LIFELINE_ENV)
        request = json.dumps({"job": spec, "claim": claim, "execute_dir": str(self.execute_dir),
                              "schedd": self.schedd_address,
                              "lifeline": int(lifeline) if lifeline else None,
                              "reconnect": self.reconnect_timeout})
        child = subprocess.Popen([sys.executable, "-m", "jobledger.daemons.schedd.local", request],
                                 stdin=subprocess.DEVNULL, close_fds=True,   # the starter leaves our session
                                 pass_fds=(int(lifeline),) if lifeline else ())
        self.children[child.pid] = child
        start = process_start_time(child.pid)
        records: list[Record | Assumed] = [Assumed.of(job, current), SetAttributes(job, set={
            "ClaimId": adwire.quote(claim), "StarterPid": str(child.pid), "StarterStart": str(start),
            "ScratchDir": adwire.quote(str(self.execute_dir / f"dir_{child.pid}")),
            "RemoteSlot": adwire.quote(LOCAL_SLOT), **first_start_attrs(current, time.time()),
        }, by="schedd"), event(EventType.EXECUTE, job, time.time(), ExecuteHost=self.schedd_address,
                               SlotName=LOCAL_SLOT)]
        try:
            self.store.append(records)
        except InvalidTransition:   # (StaleDecision: held or removed while it was started)
            child.send_signal(signal.SIGQUIT)
            self.runs.started(job, claim, ClaimEvent.REFUSED)
            raise
        self.runs.started(job, claim, ClaimEvent.EXECUTED)
        return child

    def stop(self) -> None:
        """The schedd is shutting down: stop its local jobs (they are requeued, and a
        DAGMan among them recovers when the schedd is back), as HTCondor's schedd does."""
        for ad in self.store.query(f"JobStatus == 2 && JobUniverse == {SCHEDULER}"):
            signal_local(ad, "shutdown")
        for child in self.children.values():
            child.poll()


def signal_local(ad: dict, what: str) -> bool:
    """Send ``what`` to a scheduler-universe job's starter; False if the job is not one."""
    if adwire.evaluate(ad, "RemoteSlot") != LOCAL_SLOT:
        return False
    pid, start = adwire.evaluate(ad, "StarterPid"), adwire.evaluate(ad, "StarterStart")
    if alive(pid, start):
        try:
            os.kill(pid, SIGNALS[what])
        except ProcessLookupError:
            pass
    return True


def main(argv: list[str]) -> int:
    """A scheduler-universe starter: ``python -m jobledger.daemons.schedd.local REQUEST-JSON``."""
    request = json.loads(argv[1])
    starter = Starter(request["job"], request["claim"], request["execute_dir"], request["schedd"],
                      request.get("lifeline"), request["reconnect"])
    starter.continues = False       # the schedd starts each scheduler-universe job itself
    starter.marks_start = True      # a starter killed after this is no sign the job cannot start
    return starter.run()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
