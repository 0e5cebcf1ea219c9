"""condor_qusers: show, add, enable, disable, edit and remove the schedd's User (and,
with -projects, Project) records.

    condor_qusers [-name schedd] [-pool host] [-long | -af attr... | -usage] [-constraint expr] [names]
    condor_qusers -add | -enable names
    condor_qusers -disable names | -constraint expr [-reason text]
    condor_qusers -edit attr=expr... names | -constraint expr
    condor_qusers -remove names | -constraint expr [-reason text]

The options, the default table (USER, OS_USER, ENABLED, MAX_RUN and the job counts),
the result lines (``<op> succeeded: ``, ``<op> did nothing: ``, ``<op> failed: <why>``,
the exit status the schedd's Result) are HTCondor's tool's; the schedd keeps the
records (``jobledger.daemons.schedd.userrecs``).
"""

from __future__ import annotations

import sys

from jobledger.condor_cli import pool
from jobledger.condor_cli.adprint import AutoFormat, Output
from jobledger.condor_cli.qusers_daily import daily_lines, daily_rows, display_width
from jobledger.condor_cli.args import Args, Failed, Help, Usage, constraint_problem, entry, show_version
from jobledger.eventcore.adwire import quote as _quote
from jobledger.eventcore.errors import HTCondorException

PROG = "condor_qusers"
USAGE = f"""Usage: {PROG} [ADDRESS] [DISPLAY] [NAMES]
       {PROG} [ADDRESS] [-add | -enable] [NAMES]
       {PROG} [ADDRESS] -disable [NAMES] [-reason <reason-string>]
       {PROG} [ADDRESS] [NAMES] -edit <attr>=<value> [<attr>=<value> ...]
       {PROG} [ADDRESS] -remove [NAMES]

  ADDRESS is:
    -name <name>         the schedd to ask (name or address)
    -pool <host>         the central manager to find it through

  DISPLAY is:
    -help                this text, on stdout
    -version             the version, then exit
    -long[:format]       whole records (format: long, json or xml)
    -af[:lhVrTY,tng] <attr> [attr2 [...]]
                         the attributes' values, one record a line
    -format <fmt> <attr> an attribute printed with a printf format
    -usage               completed and removed jobs and their times
    -daily[:rescale]     hourly and daily stats: jobs launched, not started,
                         requeued and held, slot hours and idle weight
    -wide                lines not cut at the terminal's width

  NAMES is zero or more of:
    <name>               the User (or Project) called <name>
    -user <name>         the same
    -constraint <expr>   the records <expr> is true of (not with -add)
    -projects            Project records instead of User records

  At most one operation:
    -add                 add enabled records
    -enable              enable records (and add those missing, with -add)
    -disable             disable records: their users cannot submit
    -remove              remove records (a user with jobs queued is disabled instead)
    -edit                set attributes of records

  Other arguments:
    -reason <string>     why (with -disable or -remove)
    <attr>=<expr>        an attribute to store (with -edit)

  Without an operation the records are shown.
"""
OPS = {"add": ("add", 3), "enable": ("enable", 2), "disable": ("disable", 2), "remove": ("remove", 3),
       "rm": ("remove", 2), "delete": ("remove", 2), "edit": ("edit", 2), "reset": ("reset", 2)}
# a first bare word may name the operation (HTCondor's tool's command words)
WORDS = {"add": "add", "enable": "enable", "disable": "disable", "edit": "edit", "remove": "remove",
         "rm": "remove", "delete": "remove", "reset": "reset", "query": "query"}
# the tool's tables: heading, width (None: as wide as its widest cell), right-aligned, cell
# (HTCondor's print formats; the slot and CPU times of finished jobs are not kept: blank)
_TIMES = [("  SlotTime", None, True, "blank"), ("  CpuTime", None, True, "blank")]
_RMVD_TIMES = [("RmvdCpuTime", None, True, "blank"), ("RmvdSlotTime", None, True, "blank")]
TABLES = {
    "user": [("USER", None, False, "name"), ("OS_USER", None, False, "os_user"),
             ("ENABLED", None, False, "enabled"), ("MAX_RUN", None, False, "max_run"),
             ("JOBS:Idle", 9, True, "idle"), ("Running", 7, True, "running"), ("   Held", 7, True, "held"),
             ("Removed", 7, True, "removed_all"), ("Completed", 9, True, "completed_all")],
    "project": [("NAME", None, False, "name"), ("JOBS:Idle", 9, True, "idle"), ("Running", 7, True, "running"),
                ("   Held", 7, True, "held"), ("Completed", 9, True, "completed"), *_TIMES,
                ("Removed", 7, True, "removed"), *_RMVD_TIMES, ("Pending", None, True, "pending")],
    "usage": [("USER", None, False, "name"), ("Completed", 9, True, "completed"), *_TIMES,
              ("Removed", 7, True, "removed"), *_RMVD_TIMES, ("Pending", None, True, "pending"),
              ("Idle", None, True, "idle"), ("Running", None, True, "running"), ("Held", None, True, "held")],
}
TABLES["prjusage"] = [("NAME", None, False, "name"), *TABLES["usage"][1:]]


def parse(argv: list[str]) -> dict:
    opts: dict = {"op": None, "names": [], "edits": [], "projects": False, "usage": False}
    output = opts["output"] = Output(PROG)
    args = Args(argv, PROG)
    for arg in args:
        if not args.is_flag():
            if opts["op"] is None and not opts["names"] and arg in WORDS:   # "condor_qusers add bob"
                opts["op"] = WORDS[arg]
                continue
            (opts["edits"] if "=" in arg else opts["names"]).append(arg)
            continue
        if args.flag("help", 1):
            raise Help()
        if args.flag("version", 1):
            show_version()
        op = next((op for word, (op, least) in OPS.items() if args.flag(word, least)), None)
        if op is not None:
            if opts["op"] is not None and opts["op"] != op:
                raise Usage()
            opts["op"] = op
        elif args.flag("projects", 4):
            opts["projects"] = True
        elif args.flag("usage", 2):
            opts["usage"] = True
        elif args.flag("wide", 1):        # -wide[:N]: lines not cut at the display width
            opts["wide"] = True
        elif args.flag("daily", 2):       # -daily[:rescale]
            qual = args.qualifier
            opts["daily"] = 2 if qual and "rescale".startswith(qual.lower()) else 1
        elif args.flag("reason", 2):
            opts["reason"] = args.value("a reason")
        elif args.flag("user", 1):
            opts["names"].append(args.value("a user name"))
        elif args.flag("constraint", 1):
            opts["constraint"] = args.constraint()
        elif args.flag("name", 1):
            opts["name"] = args.value("a schedd name")
        elif args.flag("pool", 1):
            opts["pool"] = args.value("a host name")
        elif args.flag("debug", 1) or args.flag("verbose", 4) or args.flag("raw-results", 3):
            opts["raw"] = opts.get("raw") or args.flag("raw-results", 3)
        elif not output.take(args):
            raise Usage(f"Error: unexpected argument: {arg}")
    if opts["edits"] and opts["op"] not in ("edit", "disable", "enable"):
        raise Usage("<attr>=<expr> arguments only work with -edit, -suspend and -unsuspend", status=2)
    if "reason" in opts and opts["op"] not in ("disable", "remove"):
        print("-reason argument can only be used with -disable or -remove argument")
        raise Failed(status=1)
    return opts


def run(argv: list[str]) -> int:
    opts = parse(argv)
    try:
        schedd = pool.schedd(opts.get("name"), opts.get("pool"))
    except HTCondorException as exc:
        raise Failed(f"Error: {exc}") from None
    if opts["op"] in (None, "query"):
        return show(schedd, opts)
    if opts["op"] == "reset":     # HTCondor's tool takes -reset and then does not send it
        raise Failed("Unsupported command reset")
    return change(schedd, opts)


def _names_clause(names: list[str], projects: bool) -> str:
    listed = ",".join(names).replace("\\", "\\\\").replace('"', '\\"')
    if projects:
        return f'stringListIMember(Name, "{listed}")'
    return f'(stringListIMember(Owner, "{listed}") || stringListIMember(User, "{listed}"))'


def show(schedd, opts: dict) -> int:
    clauses = [f"({opts['constraint']})"] if "constraint" in opts else []
    if opts["names"]:
        clauses.append(_names_clause(opts["names"], opts["projects"]))
    constraint = " && ".join(clauses)
    output: Output = opts["output"]
    if opts.get("daily") and output.show is None and output.listing is None:
        return show_daily(schedd, constraint, opts)
    if opts.get("daily") and isinstance(output.show, AutoFormat) and output.listing is None:
        return show_daily_af(schedd, constraint, opts)
    wanted = output.projection([])
    key = "Name" if opts["projects"] else "User"
    if wanted and key not in wanted:
        wanted = [*wanted, key]
    query = schedd.queryProjectAds if opts["projects"] else schedd.queryUserAds
    try:
        ads = query(constraint, wanted)
    except HTCondorException as exc:
        raise Failed(f"Error: query failed - {exc}") from None
    ads.sort(key=lambda ad: str(ad.get(key, "")))
    if output.write(sys.stdout, ads):
        return 0
    table = TABLES[("prjusage" if opts["usage"] else "project") if opts["projects"]
                   else ("usage" if opts["usage"] else "user")]
    rows = [[_cells(ad)[cell] for _, _, _, cell in table] for ad in ads]
    widths = [width or max([len(heading), *(len(row[i]) for row in rows)])
              for i, (heading, width, _, _) in enumerate(table)]
    right = [r for _, _, r, _ in table]
    print(_line([heading for heading, _, _, _ in table], widths, right))
    for row in rows:
        print(_line(row, widths, right))
    return 0


def show_daily(schedd, constraint: str, opts: dict) -> int:
    """-daily: each record's usage by span (``condor_cli.qusers_daily``)."""
    query = schedd.queryProjectAds if opts["projects"] else schedd.queryUserAds
    try:
        ads = query(constraint, [])
    except HTCondorException as exc:
        raise Failed(f"Error: query failed - {exc}") from None
    width = 0 if opts.get("wide") else display_width(sys.stdout)
    for line in daily_lines(ads, rescale=opts["daily"] == 2, width=width):
        print(line)
    return 0


def show_daily_af(schedd, constraint: str, opts: dict) -> int:  # opts["output"].show: an AutoFormat
    """-daily with -af: the daily rows through the -af columns, by position, as HTCondor's
    tool renders them (``condor_cli.qusers_daily``); the query asks for what -af names
    and the record's key only, as the tool's does."""
    af = opts["output"].show
    wanted = list(af.projection() or [])
    key = "Name" if opts["projects"] else "User"
    if wanted and key not in wanted:
        wanted.append(key)
    query = schedd.queryProjectAds if opts["projects"] else schedd.queryUserAds
    try:
        ads = query(constraint, wanted)
    except HTCondorException as exc:
        raise Failed(f"Error: query failed - {exc}") from None
    sys.stdout.write(af.heading())
    sys.stdout.write("".join(af.row_values(row) for row in daily_rows(ads, rescale=opts["daily"] == 2)))
    return 0


def _line(cells: list[str], widths: list[int], right: list[bool]) -> str:
    return " ".join(cell.rjust(width) if r else cell.ljust(width)
                    for cell, width, r in zip(cells, widths, right)).rstrip()


def _int(ad, name: str) -> int:
    value = ad.eval(name) if name in ad else 0
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _cells(ad) -> dict[str, str]:
    enabled = ad.eval("Enabled") if "Enabled" in ad else 0
    completed, removed = _int(ad, "TotalCompletedJobs"), _int(ad, "TotalRemovedJobs")
    return {
        "name": str(ad["Name"]) if "Name" in ad else str(ad.get("User", "")),
        "os_user": str(ad.get("OsUser", "")),
        "enabled": "yes" if enabled is True or (isinstance(enabled, int) and enabled) else "no",
        "max_run": str(ad.eval("MaxJobsRunning") if "MaxJobsRunning" in ad else "default"),
        "idle": str(_int(ad, "NumIdle")), "running": str(_int(ad, "NumRunning")), "held": str(_int(ad, "NumHeld")),
        "completed": str(completed), "removed": str(removed),
        "completed_all": str(completed + _int(ad, "NumCompleted")),
        "removed_all": str(removed + _int(ad, "NumRemoved")),
        "pending": str(_int(ad, "NumCompleted") + _int(ad, "NumRemoved")), "blank": "",
    }


def change(schedd, opts: dict) -> int:
    op, projects, names = opts["op"], opts["projects"], opts["names"]
    rectype = "projects" if projects else "users"
    constraint = opts.get("constraint")
    if op in ("add", "enable") and not names:
        raise Failed(f"Error: {op} {rectype} - no names specified")
    if op in ("disable", "remove") and not names and constraint is None:
        raise Failed(f"Error: {op} {rectype} - no names specified")
    args: dict = {"projects": projects}
    shown = op
    if opts["edits"]:
        edits: dict[str, str] = {}
        for line in opts["edits"]:
            attr, _, text = line.partition("=")
            attr, text = attr.strip(), text.strip()
            if not attr.isidentifier() or not text or constraint_problem(text):
                raise Failed(f"Error: not a valid classad assignment: {line}")
            edits[attr] = text
        # -disable / -enable with edits: HTCondor's suspend and unsuspend, one command each
        if op == "disable":
            shown, edits["Enabled"] = "suspend", "false"
            if opts.get("reason") is not None:
                edits["DisableReason"] = _quote(opts["reason"])
        elif op == "enable":
            shown, edits["Enabled"], edits["_userrec_opt_update"] = "unsuspend", "true", "true"
        if constraint is not None:
            args["ads"] = [dict(edits, Requirements=constraint)]
        elif names:
            args["ads"] = [dict(edits, **{"Name" if projects else "User": _quote(name)}) for name in names]
        else:
            raise Failed("Error: no name or constraint - don't know which users or projects to edit")
    elif op == "edit":
        raise Failed("Error: no attributes to edit")
    elif constraint is not None:
        args["constraint"] = constraint
    else:
        args["names"] = names
    if opts.get("reason") is not None and "ads" not in args:
        args["reason"] = opts["reason"]
    command = {"add": "add_userrec", "enable": "enable_userrec", "disable": "disable_userrec",
               "remove": "delete_userrec", "edit": "edit_userrec"}[op]
    from jobledger.daemons import ipc
    try:
        result = ipc.call(schedd._address, command, timeout=60, **args)
    except HTCondorException as exc:
        raise Failed(f"Error: {op} failed - {exc}") from None
    code = int(result.get("Result", 0))
    why = str(result.get("ErrorString", "")).rstrip("\n")
    if code == 0:
        print(f"{shown} {'did nothing' if result.get('NumAds', 0) == 0 else 'succeeded'}: {why}")
    else:
        print(f"{shown} failed: {why}")
    if opts.get("raw"):
        for name, value in result.items():
            if name != "ErrorString":
                print(f"    {name} = {value}")
    return code


main = entry(PROG, run, USAGE)
