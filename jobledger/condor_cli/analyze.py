"""condor_q -analyze / -better-analyze: why a job does not run, in HTCondor's layout.

For each job: its Requirements, step by step, with how many slots each step
accepts (``eventcore.classad.analyze``), then the run analysis summary -- how
many slots the job's requirements reject, how many reject the job by their
own, how many are busy or willing -- and the job's state and last match
attempt.  The counts follow HTCondor's condor_q (jobmatch.cpp): dynamic slots
are left out when partitionable ones are there, a partitionable slot too
small for the job is tried as it would be drained, and user priorities are
not considered.  ``:summary`` prints one line per job instead.
"""

from __future__ import annotations

import time

import attrs

from jobledger.eventcore.classad import ClassAd
from jobledger.eventcore.classad import analyze as A
from jobledger.eventcore.classad.matching import requirements_ok
from jobledger.eventcore.errors import ClassAdEvalError

MODE_ALWAYS, MODE_PSLOT = 1, 2       # count every slot / leave dynamic slots out
SCHEDULER, LOCAL, VANILLA, JAVA, PARALLEL, VM, GRID, MPI = 7, 12, 5, 10, 11, 13, 9, 8


@attrs.define
class Counters:
    slots: int = 0
    machines: int = 0
    job_rejects: int = 0          # the job's requirements reject the slot
    job_matches: int = 0
    slot_rejects: int = 0         # the slot's requirements reject the job
    both: int = 0
    offline: int = 0
    running: int = 0              # matching slots busy with a job
    running_yours: int = 0
    willing: int = 0
    if_drained: int = 0
    needs_analysis: int = 0


@attrs.frozen
class Slots:
    """The slot ads analyzed against, in HTCondor's order (machine, slot, dynamic slot, name)."""
    ads: list
    single_machine: str | None = None      # -machine NAME (without -mconstraint)

    @classmethod
    def of(cls, ads, single_machine: str | None = None) -> "Slots":
        def key(ad):
            slot, dslot = ad.get("SlotID"), ad.get("DSlotId")
            return (str(ad.get("Machine", "")), slot if isinstance(slot, int) else 0,
                    dslot if isinstance(dslot, int) else -1, str(ad.get("Name", "")))
        return cls(sorted(ads, key=key), single_machine)

    @property
    def dynamic(self) -> int:
        return sum(1 for ad in self.ads if isinstance(ad.get("DSlotId"), int))

    @property
    def partitionable(self) -> int:
        return sum(1 for ad in self.ads if not isinstance(ad.get("DSlotId"), int)
                   and ad.get("PartitionableSlot") is True)

    def match_mode(self, better: bool) -> int:
        """HTCondor counts dynamic slots too when only static and dynamic ones came back."""
        if better and self.dynamic > 1 and self.partitionable == 0:
            return MODE_ALWAYS
        return MODE_PSLOT


def slot_constraint(machine: str | None, mconstraint: str | None) -> str | None:
    """The collector query for the slots: -machine's name or machine, -mconstraint, and no
    dynamic slots unless a slot is named (NAME@...) or the constraint picks slot types."""
    picks = []
    if mconstraint:
        picks.append(f"({mconstraint})")
    if machine:
        quoted = machine.replace("\\", "\\\\").replace('"', '\\"')
        picks.append(f'(Name=="{quoted}" || Machine=="{quoted}")')
    if not (machine and "@" in machine):
        from jobledger.eventcore.classad.analyze import _references
        from jobledger.eventcore.classad.parser import parse_expr
        _, refs = _references(parse_expr(mconstraint), ClassAd()) if mconstraint else ({}, {})
        if not {"partitionableslot", "dynamicslot", "slottype", "dslotid"} & set(refs):
            picks.append("!(DynamicSlot?:false)")
    return " && ".join(picks) if picks else None


def _is_true(ad, name: str) -> bool:
    return ad.get(name) is True


def is_dynamic(slot) -> bool:
    """A dynamic slot as HTCondor's analysis tells one: DynamicSlot, looked at only when the
    ad says nothing of PartitionableSlot."""
    return "PartitionableSlot" not in slot and _is_true(slot, "DynamicSlot")


def drained(slot: ClassAd) -> ClassAd:
    """The partitionable slot as it would be drained: each of its MachineResources back
    at its TotalSlot value."""
    over = ClassAd(slot)
    resources = slot.get("MachineResources")
    names = resources.split() if isinstance(resources, str) else ["Cpus", "Memory", "Disk"]
    for name in names:
        if f"TotalSlot{name}" in slot:
            over[name] = slot.eval(f"TotalSlot{name}")
    return over


def _within_limits(slot: ClassAd, job: ClassAd):
    if "WithinResourceLimits" not in slot:
        return None
    value = A._eval(slot.lookup("WithinResourceLimits").node, slot, job)
    return value if type(value) is bool else None


def job_status(job: ClassAd, now: float) -> str:
    status = job.get("JobStatus")
    text = ""
    if status in (2, 6, 7):
        text = "Job is running."
    elif status == 5:
        text = "Job is held."
        reason = job.get("HoldReason")
        if isinstance(reason, str) and reason:
            text += "\n\nHold reason: " + reason
    elif status == 3:
        text = "Job is removed."
    elif status == 4:
        text = "Job is completed."
    elif status == 1 and isinstance(job.get("JobCoolDownExpiration"), int) \
            and job.get("JobCoolDownExpiration") > now:
        text = "Job is in cool down."
    return text


def run_analysis(job: ClassAd, slots: Slots, mode: int, schedd=None, now: float | None = None):
    """(counters, status text, targets for the clause table, analyze the requirements?)."""
    now = time.time() if now is None else now
    ac = Counters()
    status = job_status(job, now)
    targets: list[A.Target] = []
    universe = job.get("JobUniverse")
    if universe in (SCHEDULER, LOCAL):
        return ac, _schedd_policy(job, universe, schedd, ac, status), targets, False
    user = job.get("User") if isinstance(job.get("User"), str) else job.get("Owner")
    machines = set()
    for slot in slots.ads:
        machines.add(str(slot.get("Machine", slot.get("Name", ""))))
        is_pslot = _is_true(slot, "PartitionableSlot")
        if is_dynamic(slot) and mode == MODE_PSLOT:
            continue
        offer, within = slot, True
        if is_pslot and mode >= MODE_PSLOT and _within_limits(slot, job) is False:
            within = False
            over = drained(slot)
            if _within_limits(over, job) is not False:
                offer = over
                targets.append(A.Target(over, drained=True))
        ac.slots += 1
        if not requirements_ok(job, offer):
            ac.job_rejects += 1
            ac.needs_analysis += 1
            continue
        ac.job_matches += 1
        if not requirements_ok(offer, job):
            ac.slot_rejects += 1
            continue
        ac.both += 1
        if _is_true(offer, "Offline"):
            ac.offline += 1
        remote = offer.get("RemoteUser")
        if not isinstance(remote, str):
            if within:
                ac.willing += 1
            else:
                ac.if_drained += 1
            continue
        ac.running += 1
        if remote == user:
            ac.running_yours += 1
    ac.machines = len(machines)
    return ac, status, targets, ac.needs_analysis > 0


def _schedd_policy(job: ClassAd, universe: int, schedd, ac: Counters, status: str) -> str:
    attr = "StartLocalUniverse" if universe == LOCAL else "StartSchedulerUniverse"
    if schedd is None:
        result = "WARNING: A schedd ClassAd is needed to do analysis for scheduler or Local universe jobs.\n"
    else:
        ac.slots += 1
        ac.job_matches += 1
        value = A._eval(schedd.lookup(attr).node, schedd, job) if attr in schedd else None
        if type(value) is not bool:
            result = f"This schedd's {attr} policy failed to evalute for this job.\n"
        else:
            if value:
                ac.both += 1
            else:
                ac.slot_rejects += 1
            result = f"This schedd's {attr} evalutes to {'true' if value else 'false'} for this job.\n"
    return (status + "\n\n" if status else "") + result


def _ids(job: ClassAd) -> tuple[int, int]:
    cluster, proc = job.get("ClusterId"), job.get("ProcId")
    return (cluster if isinstance(cluster, int) else 0, proc if isinstance(proc, int) else 0)


UNIVERSE_WARNINGS = {
    MPI: "\nWARNING: Analysis is meaningless for MPI universe jobs.\n",
    SCHEDULER: "\nWARNING: Analysis is not complete for Scheduler or Local universe jobs.\n",
    LOCAL: "\nWARNING: Analysis is not complete for Scheduler or Local universe jobs.\n",
}


def requirements_analysis(job: ClassAd, slots: Slots, targets: list, mode: int, width: int) -> str:
    """The Requirements, numbered, the job's attributes they read, and the reduced table."""
    cluster, proc = _ids(job)
    request = f"{cluster}.{proc:03d}"
    out = []
    if "Requirements" in job:
        text = repr(job.lookup("Requirements"))
        out.append(f"The Requirements expression for job {request} is\n\n    {A.pretty(text, 4, width)}\n\n")
        out.append(A.numbered(job) + "\n")
    out.append(f"Job {request} defines the following attributes:\n\n")
    out.append(A.attr_lines(job, A.my_references(job, "Requirements")))
    skip_dynamic = len(slots.ads) > 1 and mode == MODE_PSLOT
    shown = [s for s in slots.ads if not (skip_dynamic and is_dynamic(s))]
    if slots.single_machine is not None or len(slots.ads) == 1:
        names = A.target_references(job, "Requirements")
        drained_of = {id(t.ad): t.ad for t in targets}
        for slot in shown:
            lines = A.target_lines(names, job, slot)
            if lines:
                out.append(f"\n{slot.get('Name', 'Target')} has the following attributes:\n\n{lines}")
            for over in drained_of.values():
                if over.get("Name") == slot.get("Name"):
                    lines = A.target_lines(names, job, over)
                    if lines:
                        out.append(f"\n{slot.get('Name', 'Target')} has the following attributes when drained:"
                                   f"\n\n{lines}")
    out.append("\n")
    table_targets = [A.Target(s) for s in shown] + list(targets)
    out.append(f"The Requirements expression for job {request} reduces to these conditions:\n\n")
    out.append(A.reduce(job, "Requirements", table_targets))
    universe = job.get("JobUniverse")
    if universe == GRID:
        resource = job.get("GridResource")
        if not (isinstance(resource, str) and "$$" in resource):
            out.append("\nWARNING: Analysis is only meaningful for Grid universe jobs using matchmaking.\n")
    elif universe in UNIVERSE_WARNINGS:
        out.append(UNIVERSE_WARNINGS[universe])
    elif universe not in (VANILLA, JAVA, PARALLEL, VM):
        out.append("\nWARNING: Job universe unknown.  Analysis may not be meaningful.\n")
    return "".join(out)


def match_totals(job: ClassAd, ac: Counters) -> str:
    cluster, proc = _ids(job)
    lines = [f"\n{cluster:03d}.{proc:03d}:  Run analysis summary ignoring user priority.  "
             f"Of {ac.slots} slots on {ac.machines} machines,\n",
             f"  {ac.job_rejects:5d} slots are rejected by your job's requirements\n",
             f"  {ac.slot_rejects:5d} slots reject your job because of their own requirements\n"]
    if ac.running_yours:
        lines.append(f"  {ac.running_yours:5d} slots match and are already running your jobs\n")
    if ac.running:
        lines.append(f"  {ac.running - ac.running_yours:5d} slots match but are serving other users\n")
    if ac.offline > 0:
        lines.append(f"  {ac.offline:5d} slots match but are currently offline\n")
    lines.append(f"  {ac.willing:5d} slots match and are willing to run your job\n")
    if ac.if_drained:
        lines.append(f"  {ac.if_drained:5d} slots would match if drained\n")
    if not ac.job_matches or not ac.both:
        lines.append("\nWARNING:  Be advised:\n")
        if not ac.job_matches:
            lines.append("   No machines matched the job's constraints\n")
        else:
            lines.append("   Job did not match any machines' constraints\n"
                         "   To see why, pick a machine that you think should match and add\n"
                         "     -reverse -machine <name>\n"
                         "   to your query.\n")
    return "".join(lines)


def _ctime(seconds: int) -> str:
    return time.strftime("%a %b %e %H:%M:%S %Y", time.localtime(seconds))


def basic_analysis(job: ClassAd, status: str) -> str:
    cluster, proc = _ids(job)
    out = f"\n{cluster:03d}.{proc:03d}:  {status}\n\n" if status else ""
    last = job.get("LastMatchTime")
    last = last if isinstance(last, int) else 0
    rejected = job.get("LastRejMatchTime")
    rejected = rejected if isinstance(rejected, int) else 0
    if last:
        out += f"Last successful match: {_ctime(last)}\n"
    elif rejected:
        out += "No successful match recorded.\n"
    if rejected > last:
        out += f"Last failed match: {_ctime(rejected)}"
        negotiator = job.get("LastRejMatchNegotiator")
        if isinstance(negotiator, str) and negotiator:
            out += f" from {negotiator}"
        out += "\n"
        reason = job.get("LastRejMatchReason")
        if isinstance(reason, str):
            out += f"Reason for last match failure: {reason}\n"
    return out


def analyze_job(job: ClassAd, slots: Slots, better: bool, width: int = 80, schedd=None,
                now: float | None = None) -> str:
    """One job's analysis, as condor_q -analyze (``better`` False) or -better-analyze prints it:
    -analyze shows the requirements only when they reject some slot."""
    mode = slots.match_mode(better) if better else MODE_PSLOT
    try:
        ac, status, targets, needed = run_analysis(job, slots, mode, schedd, now)
        out = ""
        if needed or better:
            out += requirements_analysis(job, slots, targets, mode, width) + "\n"
    except (A.AnalysisError, ClassAdEvalError) as exc:
        cluster, proc = _ids(job)
        return f"ERROR: job {cluster}.{proc}: cannot analyze its Requirements: {exc}\n"
    if ac.slots > 0:
        out += match_totals(job, ac)
    return out + "\n" + basic_analysis(job, status)


def summary(jobs: list, slots: Slots, now: float | None = None) -> str:
    """-analyze:summary: one line per job (per autocluster: its first job, counting all of
    its members) of how many slots match, reject, run or are free for it."""
    head = (f"{slots.single_machine}: " if slots.single_machine else "") + \
        f"Analyzing matches for {len(slots.ads)} slots\n"
    fmt = "{:<13} {:>12} {:>12} {:>11} {:>11} {:>10} {:>9} {}\n"
    lines = [head, fmt.format("", " Autocluster", "   Matches  ", "  Machine  ", "  Running  ", "  Serving ", "", ""),
             fmt.format(" JobId", "Members/Idle", "Requirements", "Rejects Job", " Users Job ", "Other User",
                        "Available", ""),
             fmt.format("-------------", "------------", "------------", "-----------", "-----------",
                        "----------", "---------", "")]
    groups: dict[int, list] = {}
    for job in jobs:
        auto = job.get("AutoClusterId")
        groups.setdefault(auto if isinstance(auto, int) else -1, []).append(job)
    for auto in sorted(groups):
        members = groups[auto]
        evaluated = members if auto == -1 else members[:1]
        for job in evaluated:
            counted = [job] if auto == -1 else members
            statuses = [m.get("JobStatus") for m in counted]
            idle, running = statuses.count(1), sum(statuses.count(s) for s in (2, 6, 7))
            cluster, proc = _ids(job)
            try:
                ac, _, _, _ = run_analysis(job, slots, MODE_ALWAYS, None, now)
            except ClassAdEvalError as exc:
                lines.append(f"ERROR: job {cluster}.{proc}: cannot analyze its Requirements: {exc}\n")
                continue
            members_text = f"{len(counted)}/{idle}" if auto >= 0 else ""
            busy = (f"{running}/" if running else "") + str(ac.running_yours)
            row = "{:<13} {:<12} {:12d} {:11d} {:>11} {:10d} {:9d} {}\n".format(
                f"{cluster}.{proc}", members_text, ac.slots - ac.job_rejects, ac.slot_rejects, busy,
                ac.running - ac.running_yours, ac.willing, "")
            lines.append(row)
    return "".join(lines)
