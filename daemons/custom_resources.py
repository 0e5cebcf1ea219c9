"""A startd's custom machine resources: GPUs and whatever else the admin declares.

As HTCondor's startd (``MachAttributes::init_machine_resources``), each resource has a
tag and a quantity, and non-fungible ones a list of ids:

* ``MACHINE_RESOURCE_<tag> = 2`` (a count, or an expression giving one) or
  ``MACHINE_RESOURCE_<tag> = CUDA0, CUDA1`` (ids; the count is how many);
* ``MACHINE_RESOURCE_INVENTORY_<tag> = <command>``: the command prints a ClassAd
  (old format) whose ``Detected<tag>`` is the count or the id list; its other
  attributes describe the machine and go into its slot ads;
* ``OFFLINE_MACHINE_RESOURCE_<tag>``: ids that are there but not to be used;
* ``MACHINE_RESOURCE_NAMES``: when set, only the tags it lists count;
* no GPU knob at all: GPUs are detected as ``STARTD_DETECT_GPUS`` asks (by default,
  ``-properties $(GPU_DISCOVERY_EXTRA)``; empty, ``false`` or ``0`` turns it off).
  HTCondor runs its ``condor_gpu_discovery`` for this; we read the devices NVIDIA's
  ``nvidia-smi`` lists, named as that tool names them by default (``GPU-`` and the
  first 8 hex digits of the device's UUID).  A machine without it has no GPUs.

The built-in names (Cpus, Memory, Disk, Swap ...) cannot be a custom resource: the
startd refuses to start, as HTCondor's does.  A job asks for ``<tag>`` with
``request_<tag>`` (``Request<tag>`` in its ad); a dynamic slot gets that many, and the
ids it holds are ``Assigned<tag>``.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess

import attrs

from jobledger.eventcore import adwire
from jobledger.eventcore.classad.formats import parse_old_ad
from jobledger.eventcore.errors import HTCondorException
from jobledger.daemons import gpus

RESERVED = frozenset({"CPU", "CPUS", "DISK", "SWAP", "MEM", "MEMORY", "RAM"})
INVENTORY_TIMEOUT = 60.0        # seconds an inventory command may take
INVENTORY_MAX_BYTES = 1 << 20   # what is read of its output
_KNOB = re.compile(r"^MACHINE_RESOURCE_(INVENTORY_)?([A-Za-z0-9_]+)$", re.IGNORECASE)


@attrs.define
class Resource:
    """One custom resource of the machine: ``count`` usable units, their ``ids`` when
    they have names, and the ``attrs`` (expression texts) its inventory printed."""
    tag: str
    count: int
    ids: list[str] = attrs.Factory(list)
    attrs: dict[str, str] = attrs.Factory(dict)


def parse_quantity(tag: str, text: str) -> tuple[int, list[str]]:
    """A ``MACHINE_RESOURCE_<tag>`` value: (count, ids); ids are empty for a plain count."""
    text = text.strip()
    try:
        value = adwire.evaluate_expr({}, text)
    except Exception:  # noqa: BLE001 - not an expression: a list of ids
        value = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return max(int(value), 0), []
    ids = [part for part in re.split(r"[\s,]+", text) if part]
    return len(ids), ids


def from_inventory(tag: str, output: str, offline: str = "", warn=None) -> Resource:
    """The resource an inventory command's ``output`` (an old-format ClassAd) describes.
    Output that is no ClassAd is a quantity of 0, as HTCondor's startd takes it; ``warn``
    gets the message."""
    try:
        ad = adwire.classad_exprs(parse_old_ad(output)) if output.strip() else {}
    except Exception as exc:  # noqa: BLE001 - any parse failure
        if warn is not None:
            warn(f"could not parse the ClassAd for local resource '{tag}' ({exc}): assuming a quantity of 0")
        return Resource(tag, 0)
    if output.strip() and not ad and warn is not None:
        warn(f"the inventory of local resource '{tag}' printed no ClassAd attribute: assuming a quantity of 0")
    detected = next((name for name in ad if name.lower() == f"detected{tag}".lower()), None)
    offline_text = next((_value(ad[name]) for name in ad if name.lower() == f"offline{tag}".lower()), None)
    count = 0
    ids: list[str] = []
    if detected is not None:
        count, ids = parse_quantity(tag, str(_value(ad[detected])))
    resource = _less_offline(tag, count, ids, offline_text if isinstance(offline_text, str) else offline)
    resource.attrs = {name: text for name, text in ad.items()    # Detected, Offline and the tag: the startd's own
                      if name.lower() not in (tag.lower(), f"detected{tag}".lower(), f"offline{tag}".lower())}
    return resource


def _value(text: str):
    """A literal's value (a quoted list's text), or the expression's text as it is."""
    try:
        return adwire.literal(text)
    except Exception:  # noqa: BLE001 - not a literal
        return text


def _less_offline(tag: str, count: int, ids: list[str], offline: str) -> Resource:
    off_count, off_ids = parse_quantity(tag, offline) if offline.strip() else (0, [])
    if ids:
        kept = [gpu for gpu in ids if gpu not in set(off_ids)]
        return Resource(tag, len(kept), kept)
    return Resource(tag, max(count - off_count, 0))


def run_inventory(tag: str, command: str) -> str:
    """Run ``command`` (split as a shell would, not through one) and return what it printed."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise HTCondorException(f"MACHINE_RESOURCE_INVENTORY_{tag}: {exc}") from exc
    if not argv:
        return ""
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=INVENTORY_TIMEOUT,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise HTCondorException(f"failed to execute local resource '{tag}' inventory script "
                                f"\"{command}\": {exc}") from exc
    return done.stdout[:INVENTORY_MAX_BYTES].decode("utf-8", "replace")


def detect_gpus() -> str:
    """What the default GPU discovery finds, as an inventory ad (``DetectedGPUs``)."""
    tool = shutil.which("nvidia-smi")
    if tool is None:
        return "DetectedGPUs = 0\n"
    try:
        done = subprocess.run([tool, "--query-gpu=uuid,name,memory.total", "--format=csv,noheader,nounits"],
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=INVENTORY_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "DetectedGPUs = 0\n"
    ids = []
    for line in done.stdout.decode("utf-8", "replace").splitlines():
        uuid = line.split(",")[0].strip()
        if uuid.startswith("GPU-") and len(uuid) >= 12:
            ids.append(uuid[:12])
    return f"DetectedGPUs = {adwire.quote(', '.join(ids)) if ids else 0}\n"


def machine_resources(settings: dict[str, str], run=run_inventory, detect=detect_gpus,
                      warn=None) -> dict[str, Resource]:
    """The machine's custom resources by tag, from the pool configuration ``settings``
    (name -> value, expanded).  ``run(tag, command)`` runs an inventory command and
    ``detect()`` the default GPU discovery (both replaceable to read fixed text);
    ``warn(message)`` hears of an inventory that printed no ClassAd."""
    upper = {name.upper(): value for name, value in settings.items()}
    found: dict[str, Resource] = {}
    declared: dict[str, str] = {}
    for name, value in settings.items():
        knob = _KNOB.match(name)
        if knob is None or name.upper() == "MACHINE_RESOURCE_NAMES" or not value.strip():
            continue
        tag = knob.group(2)
        declared[tag.upper()] = tag
        offline = upper.get(f"OFFLINE_MACHINE_RESOURCE_{tag.upper()}", "")
        if knob.group(1):
            found[tag] = from_inventory(tag, run(tag, value), offline, warn)
        else:
            count, ids = parse_quantity(tag, value)
            found[tag] = _less_offline(tag, count, ids, offline)
    if "GPUS" not in declared:
        auto = upper.get("STARTD_DETECT_GPUS", "-properties").strip()
        if auto and auto.lower() not in ("false", "0", "true", "1"):
            found["GPUs"] = from_inventory("GPUs", detect(), upper.get("OFFLINE_MACHINE_RESOURCE_GPUS", ""), warn)
    allowed = {tag.upper() for tag in re.split(r"[\s,]+", upper.get("MACHINE_RESOURCE_NAMES", "")) if tag}
    for tag in list(found):
        if tag.upper() in RESERVED:
            raise HTCondorException(f"MACHINE_RESOURCE_{tag} is invalid, '{tag}' is a reserved resource name")
        if allowed and tag.upper() not in allowed:
            del found[tag]
    return {tag: res for tag, res in found.items() if res.count > 0 or res.attrs}


def whole_units(value: int | float) -> int:
    """A resource request in whole units: a fraction rounds up."""
    return int(value + 0.999999) if isinstance(value, float) else int(value)


def requested(job: dict, tag: str) -> int:
    """How many units of ``tag`` the job's ad (Python values) asks for: ``Request<tag>``."""
    name = f"request{tag}".lower()
    value = next((v for k, v in job.items() if k.lower() == name), 0)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    return max(whole_units(value), 0)


def assign(custom: dict[str, Resource], wanted: dict, old: dict | None, claims) -> dict[str, list[str]]:
    """The ids a new claim takes of each resource with ids: free ones, those of the claim
    it takes over (``old``) first, so a reused claim keeps its devices."""
    out = {}
    for tag, res in custom.items():
        if not res.ids or not wanted.get(tag):
            continue
        mine = list((old or {}).get("assigned", {}).get(tag, ()))
        taken = {gpu for claim in claims if claim is not old for gpu in claim.get("assigned", {}).get(tag, ())}
        order = mine + [gpu for gpu in res.ids if gpu not in mine]
        picked = gpus.pick(order, taken, wanted[tag])
        if picked is None:      # counted free, so not expected: the ids are the truth
            raise HTCondorException(f"not enough {tag} left")
        out[tag] = picked
    return out


def job_environment(custom: dict[str, Resource], assigned: dict[str, list[str]], config) -> dict[str, str]:
    """The variables the machine gives a job holding ``assigned`` ids: per resource with ids,
    ``_CONDOR_Assigned<tag>`` and ``ENVIRONMENT_FOR_Assigned<tag>`` (for GPUs by default
    ``CUDA_VISIBLE_DEVICES`` and ``GPU_DEVICE_ORDINAL``), or ``ENVIRONMENT_VALUE_FOR_UnAssigned<tag>``
    in those when it holds none.  ``config(name, default)`` reads the pool's settings."""
    env: dict[str, str] = {}
    for tag, res in custom.items():
        if not res.ids:
            continue
        default = (gpus.DEFAULT_ENVIRONMENT, gpus.DEFAULT_UNASSIGNED) if tag.lower() == "gpus" else ("", "")
        env.update(gpus.job_environment(assigned.get(tag, []), True,
                                        config(f"ENVIRONMENT_FOR_Assigned{tag}", default[0]) or "",
                                        config(f"ENVIRONMENT_VALUE_FOR_UnAssigned{tag}", default[1]) or "",
                                        tag=tag))
    return env


def publish(ads: list[dict], custom: dict[str, Resource], free: dict, claims: list[dict]) -> None:
    """The custom resources on a machine's slot ads (``ads``: the partitionable slot, then a
    dynamic slot per claim of ``claims``, in order): the partitionable slot offers what is
    free, each dynamic slot what it holds (``Assigned<tag>``: its ids)."""
    names = " ".join(custom)
    for ad in ads:
        ad["MachineResources"] = f"Cpus Memory Disk Swap {names}"
        ad["WithinResourceLimits"] = {"expr": "(" + ad["WithinResourceLimits"]["expr"] + "".join(
            f" && (TARGET.Request{tag} =?= undefined || TARGET.Request{tag} <= MY.{tag})" for tag in custom) + ")"}
        for tag, res in custom.items():
            ad.update({f"Detected{tag}": _detected(res), f"Total{tag}": res.count,
                       f"TotalSlot{tag}": res.count})
            ad.update({name: {"expr": text} for name, text in res.attrs.items() if name not in ad})
    for tag, res in custom.items():
        ads[0][tag] = free.get(tag, 0)
        ads[0][f"Child{tag}"] = [claim["resources"].get(tag, 0) for claim in claims]
        if res.ids:     # as HTCondor's: every id of the machine, whoever holds it now
            ads[0][f"Assigned{tag}"] = ",".join(res.ids)
        for ad, claim in zip(ads[1:], claims):
            ad[tag] = ad[f"TotalSlot{tag}"] = claim["resources"].get(tag, 0)
            if res.ids:
                ad[f"Assigned{tag}"] = ",".join(claim.get("assigned", {}).get(tag, ()))


def _detected(res: Resource):
    """``Detected<tag>``: the id list when the resource has ids, else its count."""
    return ", ".join(res.ids) if res.ids else res.count
