"""condor_userprio: show and change the negotiator's user priorities.

    condor_userprio [-setprio|-setfactor|-setceiling|-setfloor|-setaccum|-setbegin|-setlast user value]
                    [-resetusage user | -resetall | -delete user | -getreslist user]
                    [-allusers] [-activefrom M D Y] [-priority] [-usage] [-most] [-all]
                    [-long [-modular]] [-af attr...] [-constraint X] [-collector|-negotiator]
                    [-name negotiator] [-pool host] [user ...]

The table is HTCondor's (its user_prio.cpp's columns, widths, sort and footer): by
default the effective priority, priority factor, cores in use, total usage in
weighted hours, time since last usage and the submitter floor and ceiling of every
submitter active in the last day, best priority first.  The records come from the
Accounting ads in the collector (``-negotiator``: from the negotiator itself); the
edits are the negotiator's commands (``htcondor.Negotiator``).
"""

from __future__ import annotations

import sys
import time

from jobledger.condor_cli import pool
from jobledger.condor_cli.adprint import Output
from jobledger.condor_cli.args import Args, Failed, Usage, entry
from jobledger.eventcore.enums import AdType, DaemonType

PROG = "condor_userprio"

NAME, PRIORITY, FACTOR, GROUP, RES_USED, WT_RES_USED = 0x1, 0x2, 0x4, 0x8, 0x10, 0x20
USE_TIME1, USE_TIME2, EFF_QUOTA, CFG_QUOTA, SURPLUS, TREE_QUOTA = 0x40, 0x80, 0x100, 0x200, 0x400, 0x800
REAL_PRIO, SORT_KEY, USE_DELTA_T, ORDER, REQUESTED, CEILING, FLOOR = (
    0x1000, 0x2000, 0x4000, 0x8000, 0x10000, 0x20000, 0x40000)
PRIOS = PRIORITY | FACTOR | REAL_PRIO
USAGE_FLAGS = RES_USED | WT_RES_USED
QUOTAS = EFF_QUOTA | CFG_QUOTA | TREE_QUOTA | SURPLUS | REQUESTED
MOST = CFG_QUOTA | SURPLUS | PRIORITY | FACTOR | USAGE_FLAGS | USE_DELTA_T | REQUESTED | CEILING | FLOOR
ALL = MOST | QUOTAS | PRIOS | USE_TIME1 | USE_TIME2

# (flag, width, heading line 1, heading line 2), in the order HTCondor prints them
COLUMNS = (
    (GROUP, 5, "Group", "Id"), (ORDER, 9, "Group", "Order"), (SORT_KEY, 9, "Group", "Sort Key"),
    (EFF_QUOTA, 9, "Effective", "Quota"), (CFG_QUOTA, 9, "Config", "Quota"),
    (SURPLUS, 7, "Use", "Surplus"), (TREE_QUOTA, 9, "Subtree", "Quota"),
    (PRIORITY, 12, "Effective", "Priority"), (REAL_PRIO, 8, "Real", "Priority"),
    (FACTOR, 9, "Priority", "Factor"), (RES_USED, 6, "Wghted", "In Use"),
    (WT_RES_USED, 12, "Total Usage", "(wghted-hrs)"), (USE_TIME1, 16, "Usage", "Start Time"),
    (USE_TIME2, 16, "Last", "Usage Time"), (USE_DELTA_T, 10, "Time Since", "Last Usage"),
    (REQUESTED, 10, "Weighted", "Requested"), (FLOOR, 9, "Submitter", "Floor"),
    (CEILING, 9, "Submitter", "Ceiling"),
)

USAGE = """usage: condor_userprio [options] [edit-option | display-options [usernames]]
    where [options] are
\t-name <name>\t\tName of negotiator
\t-pool <host>\t\tUse host as the central manager to query
\t-help\t\t\tThis Screen
    where [edit-option] is one of
\t-resetusage <user>\tReset usage data for <user>
\t-resetall\t\tReset all usage data
\t-delete <user>\t\tRemove a user record from the accountant
\t-setprio <user> <val>\tSet priority for <user>
\t-setfactor <user> <val>\tSet priority factor for <user>
\t-setfloor <user> <val>\tSet floor for <user>
\t-setceiling <user> <val>\tSet ceiling for <user>
\t-setaccum <user> <val>\tSet Accumulated usage for <user>
\t-setbegin <user> <val>\tset last first date for <user>
\t-setlast <user> <val>\tset last active date for <user>
    where [display-options] are
\t-getreslist <user>\tDisplay list of resources for <user>
    or one or more of
\t-allusers\t\tDisplay data for all users
\t-activefrom <month> <day> <year> Display data for users active since this date
\t-priority\t\tDisplay user priority fields
\t-usage\t\t\tDisplay user/group usage fields
\t-quotas\t\t\tDisplay group quota fields
\t-most\t\t\tDisplay most useful prio and usage fields
\t-all\t\t\tDisplay all fields
\t-collector\t\tForce the query to come from the collector
\t-negotiator\t\tForce the query to come from the negotiator
\t-long\t\t\tVerbose output (entire classads)
\t-constraint <expr>\tDisplay users/groups that match <expr>
\t-af[:jlhVr,tng] <attr> [attr2 [...]]
\t    Print attr(s) with automatic formatting
   if [usernames] is specified, output will be restricted to the given names if possible.
"""

# edit flag -> (negotiator command, value kind, message)
EDITS = {
    "setprio": ("setPriority", float, "The priority of {user} was set to {value:f}"),
    "setfactor": ("setFactor", float, "The priority factor of {user} was set to {value:f}"),
    "setceiling": ("setCeiling", int, "The ceiling of {user} was set to {value}"),
    "setfloor": ("setFloor", int, "The floor of {user} was set to {value}"),
    "setaccum": ("setUsage", float, "The Accumulated Usage of {user} was set to {value:f}"),
    "setbegin": ("setBeginUsage", int, "The Begin Usage Time of {user} was set to {value}"),
    "setlast": ("setLastUsage", int, "The Last Usage Time of {user} was set to {value}"),
    "resetusage": ("resetUsage", None, "The accumulated usage of {user} was reset"),
    "delete": ("deleteUser", None, "The accountant record named {user} was deleted"),
}
LOWEST = {"setfactor": (1, "Priority factors must be greater than or equal to 1."),
          "setceiling": (-1, "ceiling must be greater than or equal to -1."),
          "setfloor": (0, "floor must be greater than or equal to 0."),
          "setaccum": (0, "Usage must be greater than 0 seconds"),
          "setbegin": (0, "Time must be greater than 0 seconds"),
          "setlast": (0, "Time must be greater than 0 seconds")}
DISPLAY = {"priority": (PRIOS, 4), "usage": (USAGE_FLAGS | USE_TIME1 | USE_TIME2, 2),
           "quotas": (QUOTAS, 1), "most": (MOST, 2), "all": (ALL, 3), "surplus": (SURPLUS, 7)}


# -- HTCondor's formatting helpers ---------------------------------------------------------
def pad(text: str | None, width: int, fill: str = " ", how: str = "right") -> str:
    """CopyAndPadToWidth: ``text`` in exactly ``width`` characters (cut if longer)."""
    text = (text or "")[:width]
    if how == "left":
        return text.rjust(width, fill)
    if how == "center":
        left = (width - len(text)) // 2
        return (fill * left + text).ljust(width, fill)
    return text.ljust(width, fill)


def number(width: int, decimals: int, value: float) -> str:
    text = f"{value:{width}.{decimals}f}"
    if len(text) > width:
        text = f"{value:.{width - 6}g}"
    return pad(text, width, how="left")


def format_date(when: float) -> str:
    if when < 0:
        return "    ???    "
    t = time.localtime(when)
    return f"{t.tm_mon:2d}/{t.tm_mday:<2d} {t.tm_hour:02d}:{t.tm_min:02d}"


def format_date_year(when: float) -> str:
    if when < 0:
        return "    ???    "
    t = time.localtime(when)
    return f"{t.tm_mon:2d}/{t.tm_mday:02d}/{t.tm_year:<4d} {t.tm_hour:02d}:{t.tm_min:02d}"


def format_time(seconds: int, with_seconds: bool = True) -> str:
    if seconds < 0:
        return "[?????]"
    days, rest = divmod(int(seconds), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{days:3d}+{hours:02d}:{minutes:02d}" + (f":{secs:02d}" if with_seconds else "")


# -- the table ------------------------------------------------------------------------------
def _get(ad, name: str, default=None):
    value = ad.get(name, default)
    return default if value is None else value


def _records(ads) -> tuple[list[dict], int]:
    """Each ad as a record of what it has (``has``: the flags of the data present)."""
    records, available = [], 0
    for index, ad in enumerate(ads, 1):
        name, prio = _get(ad, "Name"), _get(ad, "Priority")
        if not isinstance(name, str) or not isinstance(prio, (int, float)):
            continue
        has = PRIORITY | NAME
        factor = float(_get(ad, "PriorityFactor", 0) or 0)
        if "PriorityFactor" in ad:
            has |= FACTOR | (REAL_PRIO if factor > 0 else 0)
        for attr, flag in (("WeightedAccumulatedUsage", USAGE_FLAGS), ("Ceiling", CEILING),
                           ("Floor", FLOOR), ("Requested", REQUESTED), ("BeginUsageTime", USE_TIME1),
                           ("LastUsageTime", USE_TIME2 | USE_DELTA_T), ("ResourcesUsed", USAGE_FLAGS),
                           ("EffectiveQuota", EFF_QUOTA), ("ConfigQuota", CFG_QUOTA)):
            if attr in ad:
                has |= flag
        if "WeightedResourcesUsed" in ad:
            has |= WT_RES_USED
        group = bool(_get(ad, "IsAccountingGroup", False))
        if group:
            has &= ~PRIORITY       # a group's priority means nothing (HTCondor hides it)
            if "SurplusPolicy" in ad:
                has |= SURPLUS
        last = int(_get(ad, "LastUsageTime", 0) or 0)
        records.append({
            "index": index, "name": name, "priority": float(prio), "factor": factor,
            "res": float(_get(ad, "WeightedResourcesUsed", _get(ad, "ResourcesUsed", 0)) or 0),
            "usage": float(_get(ad, "WeightedAccumulatedUsage", -1)), "group": group,
            "begin": int(_get(ad, "BeginUsageTime", 0) or 0), "last": last if last else -1,
            "ceiling": float(_get(ad, "Ceiling", -1)), "floor": float(_get(ad, "Floor", -1)),
            "requested": float(_get(ad, "Requested", 0) or 0),
            "cfg_quota": float(_get(ad, "ConfigQuota", 0) or 0),
            "eff_quota": float(_get(ad, "EffectiveQuota", 0) or 0),
            "tree_quota": float(_get(ad, "SubtreeQuota", 0) or 0),
            "surplus": str(_get(ad, "SurplusPolicy", "")), "has": has,
        })
        available |= has
    return records, available


def _cell(flag: int, width: int, rec: dict, last_update: int) -> str:
    if not rec["has"] & flag:
        return pad("", width)
    if flag == PRIORITY:
        return number(width, 2, rec["priority"])
    if flag == REAL_PRIO:
        return number(width, 2, rec["priority"] / rec["factor"] if rec["factor"] > 0 else 0)
    if flag == FACTOR:
        return number(width, 2, rec["factor"]) if rec["factor"] > 0 else pad("", width)
    if flag == RES_USED:
        return number(width, 0, rec["res"])
    if flag == WT_RES_USED:
        return number(width, 2, rec["usage"] / 3600.0)
    if flag in (USE_TIME1, USE_TIME2):
        when = rec["begin"] if flag == USE_TIME1 else rec["last"]
        return pad(format_date_year(when) if when > 0 else "", width, how="left")
    if flag == USE_DELTA_T:
        delta = last_update - rec["last"]
        return pad("<now>" if delta <= 0 else format_time(delta, False), width, how="left")
    if flag == CEILING:
        return number(width, 2, rec["ceiling"]) if rec["ceiling"] > -1 else pad("", width)
    if flag == FLOOR:
        return number(width, 2, rec["floor"]) if rec["floor"] > 0 else pad("", width)
    if flag == REQUESTED:
        return number(width, 0, rec["requested"])
    if flag in (CFG_QUOTA, EFF_QUOTA, TREE_QUOTA):
        return number(width, 2, rec[{CFG_QUOTA: "cfg_quota", EFF_QUOTA: "eff_quota",
                                     TREE_QUOTA: "tree_quota"}[flag]])
    if flag == SURPLUS:
        return pad("yes", width)
    return pad("", width)


def render(ads, detail: int = 0, min_last: int | None = None, now: float | None = None,
           dash_quota: bool = False) -> str:
    """HTCondor's condor_userprio table of the Accounting ``ads`` (flat: no group quotas)."""
    if not ads:
        return ""
    now = time.time() if now is None else now
    min_last = int(now) - 86400 if min_last is None else min_last
    records, available = _records(ads)
    if not records:
        return ""
    detail = detail or MOST
    for flag, mask in ((USAGE_FLAGS, USAGE_FLAGS), (FACTOR, FACTOR), (USE_TIME1, USE_TIME1),
                       (USE_TIME2, USE_TIME2 | USE_DELTA_T)):
        if not available & flag:
            detail &= ~mask
    if not dash_quota:      # no group quotas here: their columns only when asked for
        detail &= ~QUOTAS
    last_update = int(_get(ads[0], "LastUpdate", 0) or 0)
    columns = [c for c in COLUMNS if c[0] & detail]
    if detail & PRIORITY:
        records.sort(key=lambda r: (r["priority"], r["index"]))
    elif detail & USAGE_FLAGS:
        records.sort(key=lambda r: (r["usage"], r["index"]))
    else:
        records.sort(key=lambda r: (r["name"], r["index"]))
    shown = [r for r in records if r["last"] >= min_last]
    count_text = f"Number of users: {len(records)}"
    width = max([10] + [len(r["name"]) for r in shown])
    width = max(min(width, 99), len(count_text))

    def line(first: str, cells: list[str]) -> str:
        return pad(first, width) + "".join(" " + cell for cell in cells)

    out = [f"Last Priority Update: {format_date(last_update)}",
           line("", [pad(h1, w, how="center") for _, w, h1, _ in columns]),
           line("User Name", [pad(h2, w, how="center") for _, w, _, h2 in columns]),
           line("-" * width, ["-" * w for _, w, _, _ in columns])]
    users, total_res, total_usage = 0, 0.0, 0.0
    for rec in shown:
        if not rec["group"]:
            users += 1
        else:
            continue       # the <none> group alone is not shown (no group quotas)
        out.append(line(rec["name"], [_cell(f, w, rec, last_update) for f, w, _, _ in columns]))
        total_res += rec["res"]
        total_usage += rec["usage"]
    out.append(line("-" * width, ["-" * w for _, w, _, _ in columns]))
    footer = []
    for flag, w, _, _ in columns:
        if flag == RES_USED:
            footer.append(number(w, 0, total_res))
        elif flag == WT_RES_USED:
            footer.append(number(w, 2, total_usage / 3600.0))
        elif flag == USE_TIME2:
            footer.append(pad(format_date_year(min_last) if min_last > 0 else "", w, how="left"))
        elif flag == USE_DELTA_T:
            footer.append(pad("" if min_last <= 0 else (
                "<now>" if last_update - min_last <= 0 else format_time(last_update - min_last, False)),
                w, how="left"))
        else:
            footer.append(pad("", w))
    out.append(line(f"Number of users: {users}", footer))
    return "\n".join(out) + "\n"


def reslist(ad: dict, now: float | None = None) -> str:
    """-getreslist: the slots a user holds (PrintResList)."""
    now = time.time() if now is None else now
    row = "{:<30} {:>12} {:>12}\n"
    out = [row.format("Resource Name", " Start Time", " Match Time"),
           row.format("-------------", " ----------", " ----------")]
    count = 0
    while f"Name{count + 1}" in ad and f"StartTime{count + 1}" in ad:
        count += 1
        start = int(ad[f"StartTime{count}"])
        out.append(row.format(str(ad[f"Name{count}"]).rsplit("@", 1)[0], format_date(start),
                              format_time(int(now) - start)))
    out.append(row.format("-------------", " ------------", " ------------"))
    out.append(f"Number of Resources Used: {count}\n")
    return "".join(out)


# -- the command ------------------------------------------------------------------------------
def _negotiator(name: str | None, pool_name: str | None):
    from jobledger.daemons.client.api import Collector
    from jobledger.eventcore.errors import HTCondorException
    collector = Collector(pool_name) if pool_name else pool.collector()
    try:
        location = collector.locate(DaemonType.Negotiator, name)
    except HTCondorException:
        location = None
    if location is None:
        raise Failed(f"{PROG}: Can't locate negotiator '{name or 'default'}' in "
                     f"{pool_name or 'local pool'}")
    return location, collector


def _edit(flag: str, user: str, text: str | None, location) -> int:
    from jobledger.daemons import ipc
    what, kind, message = EDITS[flag]
    if "@" not in user:
        print(f"{PROG}: You must specify the full name of the submittor you wish\n"
              f"\tto update the priority of (user@uid.domain or user@full.host.name)", file=sys.stderr)
        return 1
    value: float | None = None
    if kind is not None:
        try:
            value = float(text or "") if kind is float else int(float(text or ""))
        except ValueError:
            value = 0 if kind is int else 0.0      # as atoi/atof read a non-number
        lowest = LOWEST.get(flag)
        if lowest is not None and value < lowest[0]:
            print(lowest[1], file=sys.stderr)
            return 1
    ipc.call(location["MyAddress"], "accountant", timeout=30, what=what, user=user, value=value)
    print(message.format(user=user, value=value))
    return 0


def run(argv: list[str]) -> int:
    args = Args(argv, PROG)
    output = Output(PROG)
    detail, source, name, pool_name, dash_quota = 0, None, None, None, False
    edit: tuple[str, str, str | None] | None = None
    reslist_user = None
    min_last: int | None = None
    names: list[str] = []
    constraints: list[str] = []
    for arg in args:
        word = arg.lstrip("-").lower()
        if not args.is_flag():
            names.append(arg)
        elif word in EDITS and (word != "delete" or args.flag("delete", 3)):
            user = args.value("a user name")
            edit = (word, user, args.value("a value") if EDITS[word][1] is not None else None)
        elif args.flag("delete", 3):
            edit = ("delete", args.value("a user name"), None)
        elif word == "resetall":
            edit = ("resetall", "", None)
        elif args.flag("getreslist", 6):
            reslist_user, source = args.value("a user name"), "negotiator"
        elif word == "allusers":
            min_last, source = -1, source or "negotiator"
        elif word == "activefrom":
            month, day, year = (int(args.value("a date")) for _ in range(3))
            year = year + 100 if year < 50 else year
            year = year - 1900 if year > 1900 else year
            min_last = int(time.mktime((1900 + year, month, day, 0, 0, 0, 0, 0, -1)))
        elif any(args.flag(k, least) for k, (_, least) in DISPLAY.items()):
            detail |= next(f for k, (f, least) in DISPLAY.items() if args.flag(k, least))
            dash_quota = dash_quota or args.flag("quotas", 1) or args.flag("surplus", 7)
        elif args.flag("constraint", 1):
            constraints.append(args.constraint())
        elif args.flag("collector", 3) or args.flag("negotiator", 3):
            source = "collector" if args.flag("collector", 3) else "negotiator"
        elif args.flag("name", 4):
            name = args.value("a negotiator name")
        elif args.flag("pool", 1):
            pool_name = args.value("a host")
        elif (args.flag("legacy", 3) or args.flag("modular", 3) or args.flag("hierarchical", 2)
              or args.flag("flat", 2) or word in ("grouporder", "grouprollup", "groupid", "order", "heir")):
            pass     # groups are flat here: no hierarchical group quotas
        elif output.take(args):
            pass
        else:
            raise Usage()
    if edit is not None and edit[0] == "resetall":
        from jobledger.daemons import ipc
        location, _ = _negotiator(name, pool_name)
        ipc.call(location["MyAddress"], "accountant", timeout=30, what="resetAllUsage")
        print("The accumulated usage was reset for all users")
        return 0
    if edit is not None:
        location, _ = _negotiator(name, pool_name)
        return _edit(edit[0], edit[1], edit[2], location)
    if reslist_user is not None:
        return _show_reslist(reslist_user, name, pool_name, output)
    if names:
        min_last = -1
    ads = _accounting_ads(name, pool_name, source, names, constraints)
    if output.write(sys.stdout, ads):
        return 0
    sys.stdout.write(render(ads, detail, min_last, dash_quota=dash_quota))
    return 0


def _show_reslist(user: str, name, pool_name, output) -> int:
    from jobledger.daemons import ipc
    if "@" not in user:
        print(f"{PROG}: You must specify the full name of the submittor you wish\n"
              f"\tto update the priority of (user@uid.domain or user@full.host.name)", file=sys.stderr)
        return 1
    location, _ = _negotiator(name, pool_name)
    ad = ipc.call(location["MyAddress"], "resources", timeout=30, user=user)
    if output.listing:
        from jobledger.eventcore.classad import ClassAd
        return 0 if output.write(sys.stdout, [ClassAd(ad)]) else 0
    sys.stdout.write(reslist(ad))
    return 0


def _accounting_ads(name, pool_name, source, names, constraints) -> list:
    from jobledger.eventcore import adwire
    from jobledger.daemons import ipc
    from jobledger.eventcore.classad import ClassAd
    clauses = list(constraints)
    if name:
        clauses.append(f"NegotiatorName == {adwire.quote(name)}")
    full = [n for n in names if "@" in n or n == "<none>"]
    short = [n for n in names if n not in full]
    if names:
        wanted = [f"Name =?= {adwire.quote(n)}" for n in full]
        if short:
            wanted.append(f'StringListMember(splitusername(Name)[0], {adwire.quote(",".join(short))})')
        clauses.append(" || ".join(wanted))
    constraint = pool.join_all([f"({c})" for c in clauses]) if clauses else None
    location, collector = _negotiator(name, pool_name)
    if source != "negotiator":
        ads = collector.query(AdType.Accounting, constraint or True)
        if source == "collector" or len(ads) >= len(names):
            return ads
        print("Not all user(s) found in collector, querying negotiator...", file=sys.stderr)
    ads = [ClassAd(ad) for ad in ipc.call(location["MyAddress"], "accounting_ads", timeout=30)]
    if constraint:
        ads = [ad for ad in ads if adwire.matches(constraint, {k: str(ad.lookup(k)) for k in ad.keys()})]
    return ads


main = entry(PROG, run, USAGE, help_to="stderr", help_status=1)
