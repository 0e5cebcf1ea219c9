"""The schedd's User and Project records: their fold, and what a command does to them (pure).

HTCondor's schedd keeps a record per user (``MyType = "Owner"``: ``User``, ``Owner``,
``OsUser``, ``Enabled``, ``DisableReason``, ...) and per project (``MyType =
"Project"``: ``Name``, ``Enabled``, ...).  Here each change is a ``userrec`` journal
record (``eventcore.records.UserRecord``); ``UserRecFold`` folds them into the
records as they stand, so a schedd restarted (or killed) has them back.

A user's first submit journals their record, enabled, with the submit (HTCondor's
schedd makes it then too).  A user with jobs in the queue and no record journaled (jobs
of a journal older than the records) has one ``implicit``, enabled; acting on it
journals it first.  ``decide`` turns one command (HTCondor's ENABLE_USERREC -- add is enable
with create --, DISABLE_USERREC, EDIT_USERREC, DELETE_USERREC) into the records to
append and the result ad HTCondor's schedd answers: ``NumAds`` (records acted on),
``Result`` (0, or 2 not found, 16 in use, 1 nothing named), ``ErrorString``,
``Warning``, and for an edit ``NumAttributesSet``.  A command that fails leaves
every record as it was (HTCondor aborts its transaction).
"""

from __future__ import annotations

from typing import Callable, Iterable, Mapping

import attrs

from jobledger.eventcore import adwire
from jobledger.eventcore.records import UserRecord

__all__ = ["UserRecFold", "Command", "Outcome", "decide", "user_key", "record_ad",
           "NOT_FOUND", "IN_USE", "NO_TARGET", "OPS", "new_ad"]

NOT_FOUND, IN_USE, NO_TARGET, NOT_IMPLEMENTED = 2, 16, 1, 42
OPS = ("add", "enable", "disable", "edit", "remove")
OPT_PREFIX = "_userrec_opt_"
# attributes a command ad may not set: the record's identity, its live counts, the command's own
_KEYS = {"user", "owner", "name", "ntdomain", "requirements", "targettype", "mytype", "create"}
_LIVE = {"numcompleted", "numheld", "numidle", "numjobs", "numremoved", "numrunning", "numsuspended",
         "numschedulercompleted", "numschedulerheld", "numscheduleridle", "numschedulerjobs",
         "numschedulerremoved", "numschedulerrunning"}
_ENABLE = {"enabled", "disablereason"}


def user_key(name: str, domain: str) -> str:
    """The User a name stands for: ``alice`` is ``alice@<UID domain>`` (as HTCondor's schedd)."""
    return name if "@" in name else f"{name}@{domain}"


def new_ad(kind: str, name: str, enabled: bool) -> dict[str, str]:
    if kind == "project":
        return {"MyType": '"Project"', "Name": adwire.quote(name), "Enabled": "1" if enabled else "0"}
    owner = name.partition("@")[0]
    return {"MyType": '"Owner"', "User": adwire.quote(name), "Owner": adwire.quote(owner),
            "OsUser": adwire.quote(owner), "Enabled": "1" if enabled else "0"}


class UserRecFold:
    """The records as the journal's ``userrec`` records leave them: kind -> name -> ad."""

    def __init__(self) -> None:
        self.records: dict[str, dict[str, dict[str, str]]] = {"user": {}, "project": {}}

    def apply(self, payload: Mapping) -> None:
        table = self.records[payload["kind"]]
        name = payload["name"]
        if payload["op"] == "remove":
            table.pop(name, None)
            return
        ad = table.setdefault(name, {})
        ad.update(payload["set"])
        for attr in payload["delete"]:
            ad.pop(attr, None)

    def apply_record(self, record: UserRecord) -> None:
        self.apply({"kind": record.kind, "name": record.name, "op": record.op,
                    "set": record.set, "delete": record.delete})

    def ads(self, kind: str, implicit: Iterable[str] = ()) -> dict[str, dict[str, str]]:
        """name -> ad of every record of ``kind``, with the users ``implicit`` names
        (those with jobs) that have none journaled."""
        out = dict(self.records[kind])
        if kind == "user":
            for name in implicit:
                out.setdefault(name, new_ad("user", name, True))
        return out

    def disabled_reason(self, user: str, kind: str = "user") -> str | None:
        """None when ``user`` (a project, with ``kind``) may take jobs; else why not ("" when
        no reason was given)."""
        ad = self.records[kind].get(user)
        if ad is None or _enabled(ad):
            return None
        return adwire.string_literal(ad, "DisableReason") or ""


def _enabled(ad: Mapping[str, str]) -> bool:
    try:
        value = adwire.evaluate(ad, "Enabled")
    except Exception:
        return False
    return value is True or (isinstance(value, (int, float)) and not isinstance(value, bool) and value != 0)


def record_ad(ad: Mapping[str, str], live: Mapping[str, int]) -> dict[str, str]:
    """A record as a query shows it: its attributes and the live job counts."""
    out = dict(ad)
    out.update({name: str(number) for name, number in live.items()})
    return out


@attrs.frozen
class Command:
    """One command: ``op``, on ``kind`` records; the targets are ``names``, or
    ``ads`` (command ads: a name attribute or a ``Requirements``), or ``constraint``."""

    op: str
    kind: str
    names: tuple[str, ...] = ()
    ads: tuple[Mapping[str, str], ...] = ()
    constraint: str | None = None
    reason: str | None = None
    create: bool = False
    by: str | None = None


@attrs.frozen
class Outcome:
    records: list
    result: dict   # the result ad (Python values)


class _Work:
    """A command's records and counts as they are decided (records of one append)."""

    def __init__(self, fold: UserRecFold, implicit: set[str], cmd: Command,
                 in_use: Callable[[str, str], bool]):
        self.cmd = cmd
        self.in_use = in_use
        self.table = {k: {n: dict(a) for n, a in fold.ads(k, implicit if k == "user" else ()).items()}
                      for k in ("user", "project")}
        self.journaled = {k: set(fold.records[k]) for k in ("user", "project")}
        self.records: list[UserRecord] = []
        self.num_ads = 0
        self.valid = self.invalid = self.special = 0
        self.errors: list[str] = []

    def write(self, kind: str, name: str, op: str, set_: dict, delete: Iterable[str] = ()) -> None:
        if name not in self.journaled[kind] and op != "add":   # an implicit record: journal it first
            self.records.append(UserRecord(kind, name, "add", self.table[kind][name], by=self.cmd.by))
            self.journaled[kind].add(name)
        delete = [d for d in delete if d in self.table[kind].get(name, {})]
        if not set_ and not delete and op != "add":
            return
        self.records.append(UserRecord(kind, name, op, set_, delete, self.cmd.reason
                                       if op in ("disable", "remove") else None, by=self.cmd.by))
        self.journaled[kind].add(name)
        ad = self.table[kind].setdefault(name, {})
        ad.update(set_)
        for attr in delete:
            ad.pop(attr, None)

    def edits(self, ad: Mapping[str, str], enabled: bool, count: bool) -> tuple[dict, list]:
        """What a command ad sets and deletes (HTCondor's filter of reserved attributes)."""
        sets, deletes = {}, []
        for attr, text in ad.items():
            low = attr.lower()
            if low.startswith(OPT_PREFIX):
                continue
            if low in _KEYS or low in _LIVE or low == "enabled" or (enabled and low == "disablereason"):
                if count and low not in _KEYS:
                    self.special += 1
                continue
            if text.strip() == "delete":
                deletes.append(attr)
            else:
                sets[attr] = text
            if count:
                self.valid += 1
        return sets, deletes


def _names_of(work: _Work, kind: str, constraint: str) -> list[str]:
    return [name for name, ad in sorted(work.table[kind].items()) if adwire.matches(constraint, ad)]


def decide(fold: UserRecFold, cmd: Command, domain: str, implicit: set[str],
           in_use: Callable[[str, str], bool]) -> Outcome:
    """The records ``cmd`` appends and HTCondor's result ad.  ``implicit``: users with
    jobs and no record journaled; ``in_use(kind, name)``: has the record jobs queued?"""
    work = _Work(fold, implicit, cmd, in_use)
    rval = 0
    targets: list[tuple[str | None, Mapping[str, str]]] = []
    key_attr = "Name" if cmd.kind == "project" else "User"
    if cmd.constraint is not None:
        targets.append((None, {"Requirements": cmd.constraint}))
    targets.extend((one, {}) for one in cmd.names)
    for ad in cmd.ads:
        if any(a.lower() == "requirements" for a in ad):
            targets.append((None, ad))
        else:
            found = next((a for a in ad if a.lower() == key_attr.lower()), None)
            targets.append((adwire.string_literal(ad, found) if found else None, ad))
    for name, ad in targets:
        constraint = next((t for a, t in ad.items() if a.lower() == "requirements"), None)
        if constraint is not None:
            for match in _names_of(work, cmd.kind, constraint):
                code = _act(work, cmd, match, ad)
                if code == IN_USE:
                    continue
                if code:
                    rval = code
                    break
                work.num_ads += 1
        elif name:
            name = user_key(name, domain) if cmd.kind == "user" else name
            code = _act(work, cmd, name, ad)
            if cmd.kind == "project" and code in (NOT_FOUND, IN_USE):
                code = -1     # HTCondor goes on to the next project
            if code > 0:
                rval = code
                break
            if code == 0:
                work.num_ads += 1
        else:
            rval = NO_TARGET
            work.errors.append("Dont know what project to act on." if cmd.kind == "project"
                               else "Dont know what user to act on.")
            break
        if rval:
            break
    if not rval and not work.num_ads and work.errors:
        rval = IN_USE if any(" is in use" in e for e in work.errors) else NO_TARGET
    result: dict = {"NumAds": work.num_ads, "Result": rval}
    if cmd.op == "edit":
        result["NumAttributesSet"] = work.valid
    if work.errors:
        result["ErrorString"] = "\n".join(work.errors)
    elif work.invalid or work.special:
        text = f"{'Some' if work.valid else 'All'} updates were ignored because "
        text += f"{work.special} were reserved attributes" if work.special else ""
        text += " and " if work.special and work.invalid else ""
        text += f"{work.invalid} had invalid values" if work.invalid else ""
        result["Warning"] = text
    return Outcome([] if rval else work.records, result)


def _act(work: _Work, cmd: Command, name: str, ad: Mapping[str, str]) -> int:
    """Act on one record; 0 done, else HTCondor's code (-1: skipped, no count)."""
    kind = cmd.kind
    current = work.table[kind].get(name)
    if cmd.op in ("add", "enable"):
        if current is None:
            if not (cmd.create or cmd.op == "add" or _flag(ad, "_userrec_opt_create", "_userrec_opt_create_project")):
                return NOT_FOUND
            enabled = _flag_default(ad, "Enabled", True)
            created = new_ad(kind, name, enabled)
            sets, _ = work.edits(ad, enabled, count=False)
            if not enabled and cmd.reason is not None:
                created["DisableReason"] = adwire.quote(cmd.reason)
            created.update(sets)
            work.table[kind][name] = {}
            work.write(kind, name, "add", created)
            return 0
        if _flag(ad, "_userrec_opt_update"):
            enabled = _flag_default(ad, "Enabled", _enabled(current))
            sets, deletes = work.edits(ad, True, count=True)
            limit = _max_running(ad)
            if limit == "delete":
                sets.pop("MaxJobsRunning", None)
                deletes.append("MaxJobsRunning")
            if not enabled:
                sets["Enabled"] = "0"
                if "DisableReason" not in {a for a in ad}:
                    sets["DisableReason"] = adwire.quote("by update command")
            work.write(kind, name, "edit", sets, deletes)
        else:
            enabled = _flag_default(ad, "Enabled", True)
        if enabled and not _enabled(work.table[kind][name]):
            work.write(kind, name, "enable", {"Enabled": "1"}, ["DisableReason"])
        return 0
    if current is None:
        return NOT_FOUND
    if cmd.op == "disable":
        sets, deletes = {"Enabled": "0"}, []
        reason = cmd.reason if cmd.reason is not None else _text(ad, "DisableReason")
        if reason is not None:
            sets["DisableReason"] = adwire.quote(reason)
        limit = _max_running(ad)       # condor_qusers -disable name MaxJobsRunning=0 (suspend)
        if limit == "delete":
            deletes.append("MaxJobsRunning")
        elif limit is not None:
            sets["MaxJobsRunning"] = limit
        work.write(kind, name, "disable", sets, deletes)
        return 0
    if cmd.op == "edit":
        sets, deletes = work.edits(ad, _enabled(current), count=True)
        work.write(kind, name, "edit", sets, deletes)
        return 0
    return _remove(work, kind, name)


def _remove(work: _Work, kind: str, name: str) -> int:
    """A user with jobs queued is disabled instead (HTCondor's schedd); a project with
    jobs is refused, the command going on to the next one."""
    busy = work.in_use(kind, name)
    if busy and kind == "project":
        work.errors.append(f"Project {name} is in use")
        return IN_USE
    if busy:
        work.write(kind, name, "disable", {"Enabled": "0"})     # not DisableReason: HTCondor sets none
        return 0
    if name not in work.journaled[kind]:     # implicit and idle: nothing journaled, nothing to drop
        work.table[kind].pop(name, None)
        return 0
    work.records.append(UserRecord(kind, name, "remove", {}, (), work.cmd.reason, by=work.cmd.by))
    work.table[kind].pop(name, None)
    work.journaled[kind].discard(name)
    return 0


def _text(ad: Mapping[str, str], name: str) -> str | None:
    found = next((a for a in ad if a.lower() == name.lower()), None)
    return adwire.string_literal(ad, found) if found else None


def _max_running(ad: Mapping[str, str]) -> str | None:
    """A command ad's MaxJobsRunning: its text, "delete" (undefined, negative or huge: no
    limit, as HTCondor's schedd reads it), or None (not there)."""
    found = next((a for a in ad if a.lower() == "maxjobsrunning"), None)
    if found is None:
        return None
    try:
        value = adwire.evaluate(ad, found)
    except Exception:
        return None
    if value is None or (isinstance(value, int) and not isinstance(value, bool)
                         and (value < 0 or value >= 2**31 - 1)):
        return "delete"
    return ad[found]


def _flag(ad: Mapping[str, str], *names: str) -> bool:
    for attr, text in ad.items():
        if attr.lower() in names:
            try:
                return bool(adwire.evaluate(ad, attr))
            except Exception:
                return False
    return False


def _flag_default(ad: Mapping[str, str], name: str, default: bool) -> bool:
    for attr in ad:
        if attr.lower() == name.lower():
            return _enabled({"Enabled": ad[attr]})
    return default
