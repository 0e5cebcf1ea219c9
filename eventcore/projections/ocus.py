"""Owner claimed units (HTCondor's OCUs, htcondor2 25.x ``Schedd.create_ocu`` ...): pure rules.

An OCU is a claim the schedd holds for an owner with no job on it.  As HTCondor's schedd
keeps them (``JobQueueUserRec::ocus``), the OCUs are a list of nested ads in their owner's
User record, attribute ``ocus``, journaled with the record (``userrec`` edits): each is the
request ad as given (``Owner``, ``RequestCpus``, ``RequestMemory``, ``RequestDisk``, a
``Requirements``...) with ``OCUId`` (a number from the cluster ids), ``OCUName``
(``OCU-<id>`` unless given), ``OCUClaim`` and ``IsOCUHolder`` set true.

What an OCU does, as HTCondor's schedd does it:

- unclaimed, it is idle demand of its owner's submitter: a request the negotiator sees
  (``ClusterId`` its id, ``ProcId`` -99, ``Requirements`` with ``Draining =!= true``);
- matched, its claim is held with no job (the startd's slot says ``OCU = true`` and the
  ``OCUName``) and never released for being idle;
- its owner's jobs that set ``OCUWanted`` run on it (and only on OCU claims); when none
  is idle, a job of another owner that sets ``OCUWilling`` may borrow it;
- when its owner has fewer ``OCUWanted`` jobs running than queued, the jobs borrowing
  that owner's OCUs are evicted (a fast vacate), and the owner's job takes the claim;
- ``remove_ocu`` drops it from the record and releases its claim.

Everything here is pure: the schedd's part (``daemons.schedd.ocus``) reads and commits.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from jobledger.eventcore import adwire

__all__ = ["OCU_PROC", "ocus_of", "ocus_text", "new_ocu", "request_ad", "wants", "willing",
           "may_run", "is_ocu_super", "owner_demand", "evictions", "query_ad", "STATES"]

OCU_PROC = -99      # HTCondor's OCU_qkey2: the proc id an OCU's request carries
STATES = {"unclaimed": "U", "idle": "I", "running": "R"}   # HTCondor's OCUState letters


def ocus_of(user_ad: Mapping[str, str] | None) -> list[dict[str, str]]:
    """The OCUs a User record holds (its ``ocus`` list), each as a wire ad."""
    text = None
    for name, expr in (user_ad or {}).items():
        if name.lower() == "ocus":
            text = expr
    if not text:
        return []
    try:
        value = adwire.evaluate({"ocus": text}, "ocus")
    except Exception:  # noqa: BLE001 - a list that does not parse holds no OCU
        return []
    if not isinstance(value, list):
        return []
    return [adwire.classad_exprs(item) for item in value if hasattr(item, "keys")]


def ocus_text(ocus: Iterable[Mapping[str, str]]) -> str:
    """The ``ocus`` attribute's expression text: a list of nested ads."""
    items = ["[ " + "; ".join(f"{name} = {expr}" for name, expr in ocu.items()) + " ]" for ocu in ocus]
    return "{ " + ", ".join(items) + " }"


def new_ocu(request: Mapping[str, str], ocu_id: int) -> dict[str, str]:
    """The OCU a request makes (HTCondor's ``addOCU``): the request with its id, a name
    (``OCU-<id>`` unless it gives one), ``OCUClaim`` and ``IsOCUHolder``."""
    ad = {name: expr for name, expr in request.items()
          if name.lower() not in ("ocuid", "ocuname", "ocuclaim", "isocuholder", "ocustate")}
    name = _text(request, "OCUName") or f"OCU-{ocu_id}"
    ad.update({"OCUId": str(ocu_id), "OCUName": adwire.quote(name), "OCUClaim": "true",
               "IsOCUHolder": "true"})
    return ad


def request_ad(ocu: Mapping[str, str]) -> dict[str, str]:
    """What the negotiator is sent for an unclaimed OCU (HTCondor's schedd_negotiate):
    its ad with ``ClusterId`` its id, ``ProcId`` -99, one resource request, and a
    Requirements that keeps it off draining slots."""
    ad = {name: expr for name, expr in ocu.items() if name.lower() != "requirements"}
    given = next((expr for name, expr in ocu.items() if name.lower() == "requirements"), None)
    ad["Requirements"] = f"({given}) && (Draining =!= true)" if given else "Draining =!= true"
    ad.update({"ClusterId": ocu["OCUId"], "ProcId": str(OCU_PROC), "ResourceRequestCount": "1"})
    ad.setdefault("JobUniverse", "5")
    return ad


def _flag(ad: Mapping[str, str], name: str) -> bool:
    key = next((k for k in ad if k.lower() == name.lower()), None)
    if key is None:
        return False
    try:
        return adwire.evaluate(ad, key) is True
    except Exception:
        return False


def _text(ad: Mapping[str, str], name: str) -> str | None:
    key = next((k for k in ad if k.lower() == name.lower()), None)
    value = adwire.evaluate(ad, key) if key else None
    return value if isinstance(value, str) and value else None


def wants(job: Mapping[str, str]) -> bool:
    """Does the job set ``OCUWanted`` (it runs on its owner's OCU claims only)?"""
    return _flag(job, "OCUWanted")


def willing(job: Mapping[str, str]) -> bool:
    """Does the job set ``OCUWilling`` (it may borrow another owner's OCU claim)?"""
    return _flag(job, "OCUWilling")


def may_run(job: Mapping[str, str], ocu: Mapping[str, str], borrowers: bool) -> bool:
    """May ``job`` run on ``ocu``'s claim (HTCondor's FindRunnableJob for an OCU claim)?
    First pass (``borrowers`` false): the OCU's owner's (or project's) jobs that want
    one; second pass: other owners' jobs that are willing."""
    own = _text(job, "Owner") == _text(ocu, "Owner") or (
        _text(ocu, "ProjectName") is not None and _text(job, "ProjectName") == _text(ocu, "ProjectName"))
    if own:
        return not borrowers and wants(job)
    return borrowers and willing(job) and not wants(job)


def owner_demand(jobs: Iterable[Mapping[str, str]]) -> tuple[dict[str, int], dict[str, int]]:
    """Owner -> its OCUWanted jobs that could run (idle or running), and owner -> those
    running, from job ads (Owner, JobStatus, OCUWanted).  HTCondor's count_jobs counts every
    OCUWanted job in the queue, held and completed ones too, so that one held job would have
    its owner's borrowers evicted for as long as it is held; here only a job that could run
    takes its owner's claim back."""
    wanted: dict[str, int] = {}
    running: dict[str, int] = {}
    for job in jobs:
        owner = _text(job, "Owner")
        status = adwire.evaluate(job, "JobStatus") if "JobStatus" in job else None
        if owner is None or not wants(job) or status not in (1, 2):
            continue
        wanted[owner] = wanted.get(owner, 0) + 1
        if status == 2:
            running[owner] = running.get(owner, 0) + 1
    return wanted, running


def evictions(owner_wanted: Mapping[str, int], owner_running: Mapping[str, int],
              borrowed: Mapping[str, list]) -> list:
    """The borrowing jobs to evict: for each owner with borrowed OCUs and fewer of its
    ``OCUWanted`` jobs running than queued, all the jobs on its OCUs that are not its own
    (HTCondor's count_jobs: ``OCURunningJobs < OCUWantedJobs``)."""
    out: list = []
    for owner, jobs in sorted(borrowed.items()):
        if jobs and owner_running.get(owner, 0) < owner_wanted.get(owner, 0):
            out.extend(jobs)
    return out


def is_ocu_super(identity: str | None, ocu_super_users: str | None, queue_super: bool) -> bool:
    """May ``identity`` create and remove OCUs?  A queue super user may, and so may one
    OCU_SUPER_USERS names (HTCondor's ``isOCUSuperUser``); ``None`` is the pool's own user."""
    if identity is None or queue_super:
        return True
    user = identity.partition("@")[0]
    entries = [e for e in (ocu_super_users or "").replace(",", " ").split() if e]
    return any(e == identity or ("@" not in e and e == user) for e in entries)


def query_ad(ocu: Mapping[str, str], state: str, stats: Mapping[str, int]) -> dict[str, str]:
    """An OCU as ``query_ocu`` answers it: its ad, its ``OCUState`` (U, I or R) and its
    counters (activations by owner and borrowers, claimed and used times)."""
    out = dict(ocu)
    out.update({name: str(value) for name, value in stats.items()})
    out["OCUState"] = adwire.quote(STATES[state])
    return out
