"""condor_status: the collector's ads (slots by default), as HTCondor's condor_status prints them.

``-schedd``, ``-collector``, ``-master``, ``-negotiator``, ``-submitters``,
``-startd``/``-slots`` and ``-any`` pick the ad type; ``-af``, ``-format``,
``-long``, ``-json``, ``-xml`` print ads as condor_q does; ``-total`` only the
summary; names on the command line keep the ads whose Name or Machine is
(or starts with) one of them.
"""

from __future__ import annotations

import sys
import time

from jobledger.eventcore.enums import AdType

from jobledger.condor_cli import pool, status_compact, table
from jobledger.condor_cli.adprint import Output
from jobledger.condor_cli.args import Args, Help, Usage, entry

PROG = "condor_status"

USAGE = f"""\
Usage: {PROG} [help-opt] [query-opt] [display-opt] [custom-opts ...] [name ...]
    where [query-opt] is one of
\t-any\t\t\tall ads
\t-collector\t\tthe collector
\t-master\t\t\tthe masters
\t-negotiator\t\tthe negotiator
\t-schedd\t\t\tthe schedds
\t-startd\t\t\tthe slots (the default)
\t-submitters\t\tthe submitters
\t-constraint <const>\tads matching <const>
    and [display-opt] is one of
\t-long\t\t\tthe whole ads
\t-xml\t\t\tthe whole ads as XML
\t-json\t\t\tthe whole ads as JSON
\t-attributes X,Y,...\tonly these attributes with -long, -xml, -json
\t-total\t\t\tonly the totals
\t-format <fmt> <attr>\tprint <attr> with printf format <fmt>
\t-af[:jlhVr,tng] <attr> [<attr2> ...]\tprint the attributes in a default format
"""

TYPES = {"any": AdType.Any, "collector": AdType.Collector, "master": AdType.Master,
         "negotiator": AdType.Negotiator, "schedd": AdType.Schedd, "startd": AdType.Startd,
         "slots": AdType.Startd, "submitters": AdType.Submitter}


def _activity_time(ad) -> str:
    entered = ad.get("EnteredCurrentActivity")
    now = ad.get("MyCurrentTime") or ad.get("LastHeardFrom") or int(time.time())
    if not isinstance(entered, int) or not isinstance(now, int):
        return "-"
    return table.duration(max(0, now - entered))


def _load(ad) -> str:
    load = ad.get("CondorLoadAvg", ad.get("LoadAvg"))
    return f"{float(load):.3f}" if isinstance(load, (int, float)) and not isinstance(load, bool) else "??"


def _text(name: str):
    return lambda ad: str(ad.get(name)) if ad.get(name) is not None else "??"


def _int(name: str, width: int):
    return lambda ad: f"{ad.get(name):{width}d}" if isinstance(ad.get(name), int) else "??"


SLOT_COLUMNS = [
    table.Column("Name", -18, _text("Name"), truncate=True),
    table.Column("OpSys", -10, _text("OpSys")),
    table.Column("Arch", -6, _text("Arch")),
    table.Column("State", -9, _text("State")),
    table.Column("Activity", -8, _text("Activity")),
    table.Column("LoadAv", 6, _load, truncate=True),
    table.Column("Mem", 4, _int("Memory", 4)),
    table.Column("  ActvtyTime", 12, _activity_time, noprefix=True, truncate=True),
]

STATES = ["Owner", "Claimed", "Unclaimed", "Matched", "Preempting", "Drained"]


def slot_summary(ads) -> str:
    """The totals table under the slots: per Arch/OpSys, then all."""
    rows: dict[str, list] = {}
    for ad in ads:
        rows.setdefault(f"{ad.get('Arch', '??')}/{ad.get('OpSys', '??')}", []).append(ad.get("State"))
    head = f"{'':24} Machines Owner Claimed Unclaimed Matched Preempting  Drain"

    def line(label: str, states: list) -> str:
        counts = [states.count(s) for s in STATES]
        widths = [5, 7, 9, 7, 10, 6]
        return f"{label:>24} {len(states):8d} " + " ".join(f"{c:{w}d}" for c, w in zip(counts, widths))
    every = [s for states in rows.values() for s in states]
    body = [line(label, states) for label, states in rows.items()]
    return "\n".join([head, ""] + body + ["", line("Total", every)]) + "\n"


def _name_width(ads, key: str, least: int) -> int:
    return max([least] + [len(str(ad.get(key, ""))) for ad in ads])


def daemon_table(ads, kind: AdType) -> str:
    """-schedd / -submitters / -collector: Name, Machine and job counts."""
    if kind is AdType.Collector:
        counts = [("RunningJobs", "RunningJobs", 11), ("IdleJobs", "  IdleJobs", 10),
                  ("HostsTotal", "HostsTotal", 10)]
    elif kind is AdType.Submitter:
        counts = [("RunningJobs", "RunningJobs", 11), ("IdleJobs", "  IdleJobs", 10),
                  ("HeldJobs", "  HeldJobs", 10)]
    else:
        counts = [("TotalRunningJobs", "RunningJobs", 11), ("TotalIdleJobs", "  IdleJobs", 10),
                  ("TotalHeldJobs", "  HeldJobs", 10)]
    columns = [table.Column("Name", -_name_width(ads, "Name", 4), _text("Name")),
               table.Column("Machine", -_name_width(ads, "Machine", 7), _text("Machine"))]
    columns += [table.Column(head, width, _int(attr, width)) for attr, head, width in counts]
    lines = ["", table.heading_line(columns).rstrip("\n"), ""]
    lines += [table.row_line(columns, ad).rstrip("\n") for ad in ads]
    totals = [sum(ad.get(attr, 0) for ad in ads if isinstance(ad.get(attr), int)) for attr, _, _ in counts]
    label_width = abs(columns[0].width) + 1 + abs(columns[1].width)
    lines += ["", f"{'Total':>{label_width}} " + " ".join(f"{t:{w}d}" for t, (_, _, w) in zip(totals, counts))]
    return "\n".join(lines) + "\n"


def any_table(ads) -> str:
    columns = [table.Column("MyType", -18, lambda ad: str(ad.get("MyType", "None"))),
               table.Column("TargetType", -18, lambda ad: str(ad.get("TargetType", "None"))),
               table.Column("Name", 0, lambda ad: str(ad.get("Name", "?")))]
    return "\n" + table.heading_line(columns) + "\n" + "".join(table.row_line(columns, ad) for ad in ads)


def _named(ad, names: list[str]) -> bool:
    """Is the ad one of the daemons or machines named (a host name also names its slots)?"""
    if not names:
        return True
    name, machine = str(ad.get("Name", "")), str(ad.get("Machine", ""))
    host = name.split("@", 1)[-1]
    return any(n in (name, machine) or host.split(".")[0] == n or machine.split(".")[0] == n
               or name.startswith(n + "@") or host.startswith(n + ".") for n in names)


def run(argv: list[str]) -> int:
    args = Args(argv, PROG)
    kind = AdType.Startd
    constraints: list[str] = []
    names: list[str] = []
    output = Output(PROG)
    total_only = False
    compact = False
    pool_name = None
    for arg in args:
        if not args.is_flag():
            names.append(arg)
        elif any(args.flag(word, 2) for word in TYPES):
            kind = next(TYPES[word] for word in TYPES if args.flag(word, 2))
        elif args.flag("constraint", 3):
            constraints.append(args.constraint())
        elif output.take(args):
            pass
        elif args.flag("total", 2):
            total_only = True
        elif args.flag("pool", 1):
            pool_name = args.value()
        elif args.flag("compact", 3):
            compact = True
        elif args.flag("wide", 1) or args.flag("direct", 3):
            pass
        elif args.flag("help", 1):
            raise Help()
        else:
            raise Usage(f"Error: unknown argument {arg}")
    from jobledger.daemons.client.api import Collector
    collector = Collector(pool_name) if pool_name else pool.collector()
    compact = compact and kind is AdType.Startd and not output.listing and output.show is None
    constraint = pool.join_all(constraints + ([status_compact.COMPACT_CONSTRAINT] if compact else []))
    projection = output.projection([])
    if projection and names:
        projection = list(dict.fromkeys(projection + ["Name", "Machine"]))
    ads = sorted((ad for ad in collector.query(kind, constraint, projection or None) if _named(ad, names)),
                 key=lambda ad: (str(ad.get("MyType", "")), str(ad.get("Name", ""))))
    out = sys.stdout
    if output.write(out, ads):
        pass
    elif compact:
        if not total_only:
            out.write(status_compact.table(ads))
        if ads:
            out.write("\n" + status_compact.totals(ads))
    elif kind is AdType.Startd:
        if not total_only:
            out.write("\n" + table.heading_line(SLOT_COLUMNS) + "\n")
            out.write("".join(table.row_line(SLOT_COLUMNS, ad) for ad in ads))
        if ads:
            out.write("\n" + slot_summary(ads))
    elif kind in (AdType.Schedd, AdType.Submitter, AdType.Collector):
        out.write(daemon_table(ads, kind))
    else:
        out.write(any_table(ads))
    return 0


main = entry(PROG, run, USAGE, help_to="stderr")
