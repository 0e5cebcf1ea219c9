"""condor_status -compact: one line per machine, as HTCondor's condor_status prints it.

Its columns are HTCondor's startdCompact print format (condor_status's
prettyPrint.cpp): Machine, Platform, Slots (the dynamic slots carved out of a
partitionable slot, or the count of static slots, tagged S), Cpus, Gpus,
TotalGb, FreCpu, FreeGb, CpuLoad, ST (state and activity letters, ``*`` where
slots differ), Jobs/Min and MaxSlotGb.  Dynamic slots are left out (their
partitionable slot speaks for them); the static slots of one machine fold into
one line (status.cpp's fold_slot_result).  The totals count, per platform,
each partitionable slot's children by their state and the slot itself while it
has cpus left, and every static slot.
"""

from __future__ import annotations

import attrs

COMPACT_CONSTRAINT = "PartitionableSlot =?= true || DynamicSlot =!= true"
STATE_LETTERS = {"Owner": "O", "Unclaimed": "U", "Matched": "M", "Claimed": "C", "Preempting": "P",
                 "Shutdown": "S", "Delete": "X", "Backfill": "F", "Drained": "D"}
ACTIVITY_LETTERS = {"Idle": "i", "Busy": "b", "Retiring": "r", "Vacating": "v", "Suspended": "s",
                    "Benchmarking": "e", "Killing": "k"}
BUSY_STATES = {"Matched", "Claimed", "Preempting"}


def _number(ad, name: str):
    value = ad.get(name)
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def platform(ad) -> str:
    """HTCondor's PLATFORM: ``x64/`` + OpSysAndVer (OpSysShortName on Windows)."""
    opsys = ad.get("OpSysShortName") if ad.get("OpSys") == "WINDOWS" else ad.get("OpSysAndVer")
    if not isinstance(opsys, str):
        return ""
    arch = ad.get("Arch") if isinstance(ad.get("Arch"), str) else ""
    arch = {"X86_64": "x64", "X86": "x86"}.get(arch, arch)
    return f"{arch}/{opsys}"


def activity_code(state, activity) -> str:
    return STATE_LETTERS.get(state, " ") + ACTIVITY_LETTERS.get(activity, " ")


def _consensus(values, letters: dict, wins: str) -> str | None:
    """The one value all children share; ``*`` when they differ (``wins`` takes over)."""
    seen = None
    for value in values if isinstance(values, list) else []:
        if value not in letters:
            continue
        if seen is None:
            seen = value
        elif value != seen:
            if value == wins:
                return value
            seen = "*"
    return seen


@attrs.define
class Row:
    machine: str
    platform: str
    slots: int | None
    tag: str
    cpus: int | None
    gpus: int | None
    total_mem: float | None
    free_cpus: int
    free_mem: float
    load: float | None
    code: str
    starts: float | None
    max_mem: float | None
    partitionable: bool
    busy: bool
    cooked: bool = False


def _row(ad) -> Row:
    partitionable = ad.get("PartitionableSlot") is True
    slot_type = ad.get("SlotType")
    tag = {"Static": "S", "Partitionable": " "}.get(slot_type, slot_type[:1]) if isinstance(slot_type, str) else ""
    total_cpus, load = _number(ad, "TotalCpus"), _number(ad, "TotalLoadAvg")
    children = ad.get("ChildMemory")
    child_mem = [m for m in children if isinstance(m, (int, float))] if isinstance(children, list) else []
    code = activity_code(ad.get("State"), ad.get("Activity"))
    cpus_now = _number(ad, "Cpus") or 0
    if partitionable:
        code = _rolled_up(code, ad, exhausted=cpus_now < 0.1)
    starts = _number(ad, "RecentJobStarts")
    memory = _number(ad, "Memory")
    return Row(str(ad.get("Machine", "??")), platform(ad), _number(ad, "NumDynamicSlots"), tag,
               _number(ad, "TotalSlotCpus"), _number(ad, "TotalSlotGpus"),
               None if _number(ad, "TotalSlotMemory") is None else ad.get("TotalSlotMemory") / 1024.0,
               int(cpus_now), (memory or 0) / 1024.0,
               load * 1.0 / total_cpus if load is not None and total_cpus else None, code,
               None if starts is None else starts / 20.0,
               max(child_mem) / 1024.0 if child_mem else None, partitionable,
               ad.get("State") in BUSY_STATES)


def _rolled_up(code: str, ad, exhausted: bool) -> str:
    """A partitionable slot's ST with its children's: theirs when it is exhausted and idle,
    Claimed over Drained, Preempting/vacating over anything, ``*`` where they differ."""
    state = _consensus(ad.get("ChildState"), STATE_LETTERS, "Preempting")
    activity = _consensus(ad.get("ChildActivity"), ACTIVITY_LETTERS, "Vacating")
    bsc = "*" if state == "*" else STATE_LETTERS.get(state, " ") if state else " "
    bac = "*" if activity == "*" else ACTIVITY_LETTERS.get(activity, " ") if activity else " "
    asc, aac = code[0], code[1]
    if asc == "U" and aac == "i" and exhausted:
        asc, aac = bsc, bac
    elif asc == "D" and bsc == "C":
        asc = bsc
    if bsc == "P":
        asc = bsc
    if bac == "v":
        aac = bac
    if state is not None and asc != bsc:
        asc = "*"
    if activity is not None and aac != bac:
        aac = "*"
    return asc + aac


def _cook(row: Row) -> None:
    """A static slot about to have others folded in: its own count, memory and free share."""
    if row.partitionable or row.cooked:
        return
    row.max_mem = row.free_mem
    if row.busy:
        row.free_cpus, row.free_mem = 0, 0.0
    row.slots = 1
    row.cooked = True


def _fold(into: Row, other: Row) -> None:
    _cook(into)
    other_mem = (other.max_mem or 0.0) if other.partitionable else other.free_mem
    into.max_mem = max(into.max_mem or 0.0, other_mem)
    if other.partitionable or not other.busy:
        into.free_mem += other.free_mem
        into.free_cpus += other.free_cpus
    into.slots = (into.slots or 1) + ((other.slots or 0) if other.partitionable else 1)
    if into.starts is not None or other.starts is not None:
        into.starts = (into.starts or 0.0) + (other.starts or 0.0)
    into.code = "".join(a if a == b else "*" for a, b in zip(into.code, other.code))


def rows(ads) -> list[Row]:
    """The lines: one per partitionable slot, the static slots of a machine folded together."""
    out: list[Row] = []
    for ad in sorted(ads, key=lambda a: (str(a.get("Machine", "")), _number(a, "SlotTypeID") or 0,
                                         str(a.get("Name", "")))):
        row = _row(ad)
        last = out[-1] if out else None
        if last is not None and last.machine == row.machine and not row.partitionable and not last.partitionable:
            _fold(last, row)
            continue
        if not row.partitionable:
            _cook(row)
        out.append(row)
    return out


def _f(value, fmt: str, width: int, missing: str = "") -> str:
    return format(value, fmt) if value is not None else missing.rjust(width)


def table(ads) -> str:
    lines = rows(ads)
    width = max([len("Machine")] + [len(r.machine) for r in lines])
    plat = max([len("Platform")] + [len(r.platform) for r in lines])
    head = (f"{'Machine':<{width}} {'Platform':<{plat}} Slots Cpus Gpus  TotalGb FreCpu  FreeGb  CpuLoad ST "
            "Jobs/Min MaxSlotGb")
    body = []
    for r in lines:
        body.append(f"{r.machine:<{width}} {r.platform:<{plat}} {_f(r.slots, '4d', 4, ' ')}{r.tag} "
                    f"{_f(r.cpus, '4d', 4)} {_f(r.gpus, '4d', 4)} {_f(r.total_mem, '8.2f', 8)} "
                    f"{r.free_cpus:6d} {r.free_mem:8.2f} {_f(r.load, '7.2f', 7)} {r.code:<2} "
                    f"{_f(r.starts, '8.2f', 8, '_')} {_f(r.max_mem, '9.2f', 9, '*')}")
    return "\n" + head + "\n\n" + "\n".join(body) + ("\n" if body else "")


TOTAL_STATES = ["Owner", "Claimed", "Unclaimed", "Matched", "Preempting", "Drained", "Backfill"]


def totals(ads, key_width: int = 14) -> str:
    """The summary under the compact lines (HTCondor's StartdNormalTotal, partitionable
    slots rolled up into their children's states)."""
    by_key: dict[str, dict[str, int]] = {}
    for ad in ads:
        if ad.get("PartitionableSlot") is not True and ad.get("DynamicSlot") is True:
            continue
        counts = by_key.setdefault(platform(ad), {})
        if ad.get("PartitionableSlot") is True:
            children = ad.get("ChildState")
            for state in children if isinstance(children, list) else []:
                _count(counts, state)
            if (_number(ad, "Cpus") or 0) >= 0.1 and ad.get("SlotBackfill") is not True:
                _count(counts, ad.get("State"))
        else:
            _count(counts, ad.get("State"))
    if not by_key:
        return ""

    def cut(text: str) -> str:
        return text[:key_width].rjust(key_width)

    def line(counts: dict) -> str:
        return (f"{counts.get('_total', 0):6d} {counts.get('Owner', 0):5d} {counts.get('Claimed', 0):7d} "
                f"{counts.get('Unclaimed', 0):9d} {counts.get('Matched', 0):7d} {counts.get('Preempting', 0):10d} "
                f"{counts.get('Drained', 0):6d} {counts.get('Backfill', 0):8d} {0:6d}")
    everything: dict[str, int] = {}
    for counts in by_key.values():
        for name, n in counts.items():
            everything[name] = everything.get(name, 0) + n
    out = [cut("") + " Total Owner Claimed Unclaimed Matched Preempting  Drain Backfill BkIdle", ""]
    out += [cut(key) + line(counts) for key, counts in sorted(by_key.items())]
    out += ["", cut("Total") + line(everything)]
    return "\n".join(out) + "\n"


def _count(counts: dict, state) -> None:
    if state in TOTAL_STATES:
        counts[state] = counts.get(state, 0) + 1
        counts["_total"] = counts.get("_total", 0) + 1
