"""condor_q: the jobs in the schedd's queue, as HTCondor's condor_q prints them.

Without output options one line per batch (owner and batch name, or the
cluster), then the totals lines; ``-nobatch``/``-run``/``-hold``/``-idle``
one line per job; ``-af``/``-format``/``-long``/``-json``/``-xml`` as the
scripts that parse condor_q expect (``adprint``).  Only the caller's jobs
unless ids, owners or ``-allusers`` are given.
"""

from __future__ import annotations

import io
import os
import sys
import time

from jobledger.eventcore.enums import QueryOpt
from jobledger.eventcore.errors import JobledgerError

from jobledger.condor_cli import pool, table
from jobledger.condor_cli.adprint import Output
from jobledger.condor_cli.args import Args, Failed, Help, Usage, entry, show_version

PROG = "condor_q"

USAGE = f"""\
Usage: {PROG} [general-opts] [restriction-list] [output-opts]

    [general-opts] are
\t-name <name>\t\t Name of the schedd
\t-pool <host>\t\t Use host as the central manager to query
\t-allusers\t\t Consider jobs of all users, not only yours

    [restriction-list] each restriction may be one of
\t<cluster>\t\t Jobs of this cluster
\t<cluster>.<proc>\t This job
\t<owner>\t\t\t Jobs of this owner
\t-constraint <expr>\t Jobs matching <expr>

    [output-opts] are
\t-limit <num>\t\t At most <num> jobs
\t-totals\t\t\t Only the totals
\t-batch\t\t\t One line per batch of jobs (the default)
\t-nobatch\t\t One line per job
\t-run\t\t\t Running jobs, with the host they run on
\t-hold\t\t\t Held jobs, with why
\t-idle\t\t\t Idle jobs
\t-wide\t\t\t Do not cut lines at 80 columns
\t-long\t\t\t Whole job ClassAds
\t-xml\t\t\t Whole job ClassAds as XML
\t-json\t\t\t Whole job ClassAds as JSON
\t-attributes X,Y,...\t Only these attributes with -long, -xml, -json
\t-format <fmt> <attr>\t Print <attr> with printf format <fmt>
\t-autoformat[:jlhVr,tng] <attr> [<attr2> ...]
\t-af[:jlhVr,tng] <attr> [<attr2> ...]
\t\t\t\t Print the attributes (or expressions) in a default format
"""

STATUS_FILTER = {"run": "JobStatus == 2", "hold": "JobStatus == 5", "idle": "JobStatus == 1"}


class Options:
    def __init__(self) -> None:
        self.ids: list[str] = []
        self.owners: list[str] = []
        self.constraints: list[str] = []
        self.allusers = False
        self.mode = "batch"          # batch, nobatch, run, hold, idle
        self.totals = False
        self.wide = False
        self.wide_width = 0          # -wide:N -- cut at N-1 columns, terminal or not
        self.dag = False             # -dag: with -nobatch, node jobs under their DAGMan jobs
        self.limit = -1
        self.output = Output(PROG)
        self.name: str | None = None
        self.pool: str | None = None
        self.analyze: str | None = None     # "analyze" or "better"
        self.analyze_summary = False
        self.machine: str | None = None
        self.mconstraint: str | None = None


def parse(argv: list[str], prog: str = PROG) -> Options:
    opts = Options()
    args = Args(argv, prog)
    for arg in args:
        if not args.is_flag():
            _restriction(opts, arg)
        elif args.flag("constraint", 2):
            opts.constraints.append(args.constraint())
        elif opts.output.take(args):
            pass
        elif args.flag("totals", 3):
            opts.totals = True
        elif args.flag("nobatch", 3):
            opts.mode = "nobatch"
        elif args.flag("batch", 2):
            opts.mode = "batch"
        elif args.flag("run", 1) or args.flag("hold", 2) or args.flag("idle", 2):
            opts.mode = next(m for m in ("run", "hold", "idle") if args.flag(m, 1))
        elif args.flag("wide", 1):
            opts.wide = not args.qualifier
            if args.qualifier:
                try:
                    opts.wide_width = int(args.qualifier)
                except ValueError:
                    raise Usage(f"Error: -wide:{args.qualifier}: the width must be a number",
                                show_usage=False) from None
        elif args.flag("limit", 3):
            opts.limit = args.int_value()
            if opts.limit < 1:
                raise Usage(f"Error: {opts.limit} is not a valid for -limit.", show_usage=False)
        elif args.flag("allusers", 2):
            opts.allusers = True
        elif args.flag("submitter", 1):
            opts.owners.append(args.value())
        elif args.flag("name", 1):
            opts.name = args.value()
        elif args.flag("pool", 1):
            opts.pool = args.value()
        elif args.flag("dag", 2):
            opts.dag = True
        elif any(args.flag(word, 2) for word in ("better-analyze", "better-analyse", "analyze", "analyse")):
            _analyze_flag(opts, arg, args.qualifier)
        elif args.flag("machine", 2):
            opts.machine = args.value("a machine or slot name")
        elif args.flag("mconstraint", 2):
            opts.mconstraint = args.constraint()
        elif args.flag("global", 1) or args.flag("currentrun", 2) \
                or args.flag("cumulative-time", 2) or args.flag("stream-results", 2) \
                or args.flag("expert", 2):
            pass  # one schedd, no DAG nesting to show: these change nothing here
        elif args.flag("version", 1):
            show_version()
        elif args.flag("help", 1):
            raise Help()
        else:
            raise Usage(f"Error: unrecognized argument {arg}")
    return opts


def _analyze_flag(opts: Options, arg: str, qualifier: str | None) -> None:
    """-analyze / -better-analyze (and the -analyse spellings), with ``:summary``."""
    word = arg.lstrip("-")
    opts.analyze = "better" if word[:1] == "b" else (opts.analyze or "analyze")
    for qual in filter(None, (qualifier or "").replace(":", ",").split(",")):
        if "summary".startswith(qual.lower()):
            opts.analyze_summary = True
        else:
            raise Usage(f"Error: {arg}: the qualifier '{qual}' is not supported here "
                        "(only summary is)", show_usage=False)


def _restriction(opts: Options, arg: str) -> None:
    if pool.parse_proc_id(arg) is not None:
        opts.ids.append(arg)
    elif arg[:1].isdigit():
        raise Usage(f"Error: Argument ({arg}) must be a jobid or user", show_usage=False)
    else:
        opts.owners.append(arg)


def constraint_of(opts: Options, me: str) -> str | None:
    """The query's constraint: restrictions, -constraint, the status filter, my jobs."""
    picks = []
    for text in opts.ids:
        cluster, proc = pool.parse_proc_id(text)
        picks.append(pool.id_clause(cluster, proc))
    picks += [pool.owner_clause(o) for o in opts.owners]
    mine = None if (opts.allusers or opts.ids or opts.owners) else pool.owner_clause(me)
    return pool.join_all([pool.join_any(picks), *opts.constraints, STATUS_FILTER.get(opts.mode), mine])


def _network_owner(address: str) -> str | None:
    """Over the network "my jobs" are those of the identity the pool authenticated (the
    user of the token), not this machine's user name; None for the pool's own machine."""
    from jobledger.daemons import ipc
    try:
        _, port, path = ipc.parse_address(address)
        if port == 0 or (path is not None and ipc._ours(path)):
            return None
        from jobledger.daemons.secman import ping_ad
        user = ping_ad(address, "READ")["MyRemoteUserName"]
    except JobledgerError:
        return None
    return str(user).partition("@")[0] or None


def run(argv: list[str]) -> int:
    opts = parse(argv)
    me = pool.user_name()
    location = pool.schedd_ad(opts.name, opts.pool)
    me = _network_owner(location["MyAddress"]) or me
    from jobledger.daemons.client.api import Schedd
    schedd = Schedd(location)
    constraint = constraint_of(opts, me)
    out = sys.stdout
    if opts.analyze:
        return run_analyze(opts, schedd, location, constraint, out)
    if opts.output.wants_exprs():
        from jobledger.daemons.client.api import query_exprs
        opts.output.write_exprs(out, query_exprs(schedd, constraint, opts.output.projection([]), opts.limit))
        return 0
    if opts.totals and not opts.output.listing:   # counted by the schedd, no ads fetched
        out.write(totals(opts, schedd, constraint, None, me))
        return 0
    wanted = BATCH_ATTRS if opts.mode == "batch" else table.ATTRS_DEFAULT + ["DAGNodeName"]
    ads = schedd.query(constraint, opts.output.projection(wanted), limit=opts.limit)
    if opts.output.write(out, ads):
        return 0
    out.write(banner(location))
    out.write(job_table(opts, ads, line_width(opts, out)))
    if opts.mode != "run":
        out.write(totals(opts, schedd, constraint, ads, me))
    return 0


def run_analyze(opts: Options, schedd, location, constraint: str | None, out) -> int:
    """condor_q -analyze / -better-analyze: the slots from the collector, each job against them."""
    from jobledger.condor_cli import analyze
    from jobledger.eventcore.enums import AdType
    slot_query = analyze.slot_constraint(opts.machine, opts.mconstraint)
    collector = pool.collector(opts.pool)
    slots = analyze.Slots.of(collector.query(AdType.Startd, slot_query),
                             opts.machine if opts.machine and not opts.mconstraint else None)
    jobs = sorted(schedd.query(constraint, [], limit=opts.limit), key=lambda ad: (ad.get("ClusterId", 0),
                                                                                    ad.get("ProcId", 0)))
    columns = terminal_columns(out)
    width = opts.wide_width if opts.wide_width > 0 else (columns if columns > 0 else 80)
    out.write(f"\n\n-- Schedd: {location.get('Name', '')} : {_short_address(location)}\n")
    if opts.analyze_summary:
        out.write(analyze.summary(jobs, slots))
        return 0
    policy = _full_schedd_ad(collector, location)
    for job in jobs:
        out.write(analyze.analyze_job(job, slots, opts.analyze == "better", width, policy))
    return 0


def _full_schedd_ad(collector, location):
    """The schedd's whole ad from the collector (a location ad lacks the START_*_UNIVERSE
    policies a scheduler-universe job is judged by), or the location ad if it has none."""
    from jobledger.eventcore.adwire import quote
    from jobledger.eventcore.enums import AdType
    from jobledger.eventcore.errors import HTCondorException
    name = location.get("Name")
    if not isinstance(name, str):
        return location
    try:
        found = collector.query(AdType.Schedd, f"Name == {quote(name)}")
    except HTCondorException:
        return location
    return found[0] if found else location


def _short_address(location) -> str:
    address = str(location.get("MyAddress", ""))
    return address[:address.index("?")] + "?..." if "?" in address else address


BATCH_ATTRS = ["ClusterId", "ProcId", "Owner", "QDate", "JobStatus", "JobBatchName", "DAGManJobId",
               "TotalSubmitProcs", "JobUniverse", "DAG_NodesTotal", "DAG_NodesDone"]
SCHEDULER_UNIVERSE = 7


def banner(location) -> str:
    address = _short_address(location)
    stamp = time.strftime("%m/%d/%y %H:%M:%S", time.localtime())
    return f"\n\n-- Schedd: {location.get('Name', '')} : {address} @ {stamp}\n"


def line_width(opts: Options, out=None) -> int:
    """Where condor_q cuts a job line (0: nowhere), HTCondor's rule (queue.cpp): without
    -wide, and only when standard output is a terminal, at its width less one; ``-wide:N``
    at N less one; into a pipe or a file, and with -wide, lines are whole -- the last column
    (CMD, HOLD_REASON, HOST(S)) included."""
    if opts.wide_width > 0:
        return opts.wide_width - 1
    if opts.wide:
        return 0
    columns = terminal_columns(out if out is not None else sys.stdout)
    return columns - 1 if columns > 0 else 0


def terminal_columns(out) -> int:
    """The terminal's width if ``out`` is one (HTCondor's getConsoleWindowSize), else -1."""
    try:
        return os.get_terminal_size(out.fileno()).columns
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return -1


def job_table(opts: Options, ads: list, width: int = 0) -> str:
    if opts.mode == "batch":
        return batch_table(ads)
    columns = {"run": table.JOB_RUN, "hold": table.JOB_HOLD}.get(opts.mode, table.JOB_DEFAULT)
    if opts.dag and opts.mode == "nobatch":
        columns, ads = table.JOB_DAG, dag_order(ads)
    return table.heading_line(columns) + "".join(table.row_line(columns, ad, width) for ad in ads)


class _Named:
    """A job ad whose OWNER/NODENAME column shows ``name``."""

    def __init__(self, ad, name: str):
        self.ad, self.name = ad, name

    def get(self, key: str, default=None):
        return self.name if key == "_dag_name" else self.ad.get(key, default)


def dag_order(ads: list) -> list:
    """The jobs in condor_q -nobatch -dag's order, each node job's name column set.

    As HTCondor's condor_q links them (queue.cpp, linkup_nodes_by_id): in job id order,
    a job whose DAGManJobId names a DAGMan job (proc 0) shown here is that job's child,
    one generation deeper; the first child of a DAGMan job, and then the first proc of
    each later child cluster, hang under it.  Each job is printed in id order, its
    children right after it (recursively); the other procs of a child cluster come in
    their own place.  A node job's name column is ``|-`` and its DAGNodeName, after one
    space per generation."""
    rows = sorted(({"ad": ad, "children": [], "generation": 0, "done": False} for ad in ads),
                  key=lambda r: (r["ad"].get("ClusterId", 0), r["ad"].get("ProcId", 0)))
    by_id = {(r["ad"].get("ClusterId"), r["ad"].get("ProcId")): r for r in rows}
    for before, row in zip(rows, rows[1:]):
        dag = row["ad"].get("DAGManJobId")
        parent = by_id.get((dag, 0)) if isinstance(dag, int) and dag > 0 else None
        if parent is None:
            continue
        row["generation"] = parent["generation"] + 1
        first_proc = before["ad"].get("ClusterId") != row["ad"].get("ClusterId")
        if not parent["children"] or first_proc:
            parent["children"].append(row)
    out: list = []

    def put(row) -> None:
        row["done"] = True
        ad = row["ad"]
        if isinstance(ad.get("DAGManJobId"), int) and isinstance(ad.get("DAGNodeName"), str):
            ad = _Named(ad, " " * row["generation"] + "|-" + ad.get("DAGNodeName"))
        out.append(ad)
        for child in row["children"]:
            put(child)
    for row in rows:
        if not row["done"]:
            put(row)
    return out


def _batch_key(ad) -> tuple[str, str]:
    owner = table.owner(ad)
    name = ad.get("JobBatchName")
    if isinstance(name, str) and name:
        return owner, name
    dag = ad.get("DAGManJobId")
    if isinstance(dag, int):
        return owner, f"DAG: {dag}"
    return owner, f"ID: {ad.get('ClusterId')}"


def _job_ids(members: list) -> str:
    ids = [(m.get("ClusterId"), m.get("ProcId")) for m in members]
    (c0, p0), (c1, p1) = ids[0], ids[-1]
    if len(ids) == 1:
        return f"{c0}.{p0}"
    if c0 == c1:
        return f"{c0}.{p0}-{p1}"
    return f"{c0}.{p0} ... {c1}.{p1}"


def batch_table(ads: list) -> str:
    """One line per batch: OWNER BATCH_NAME SUBMITTED DONE RUN IDLE [HOLD] TOTAL JOB_IDS.

    As HTCondor's condor_q (queue.cpp, reduce_procs): a DAGMan job (scheduler universe)
    counts its DAG's nodes -- DAG_NodesTotal and DAG_NodesDone of its ad -- not itself;
    its node jobs count in RUN, IDLE and HOLD only; other clusters count their procs."""
    batches: dict[tuple[str, str], list] = {}
    for ad in ads:
        batches.setdefault(_batch_key(ad), []).append(ad)
    held = not ads or any(ad.get("JobStatus") == 5 for ad in ads)
    width = max([5] + [len(owner) for owner, _ in batches])
    counts = ["  DONE", "  RUN ", "  IDLE"] + (["  HOLD"] if held else []) + [" TOTAL"]
    lines = [f"{'OWNER'.ljust(width)} {'BATCH_NAME'.ljust(11)} {'  SUBMITTED'} {' '.join(counts)} JOB_IDS\n"]
    for (owner, name), members in batches.items():
        dagmen = [m for m in members if m.get("JobUniverse") == SCHEDULER_UNIVERSE]
        jobs = [m for m in members if m.get("JobUniverse") != SCHEDULER_UNIVERSE]
        plain = [m for m in jobs if not isinstance(m.get("DAGManJobId"), int)]
        status = [m.get("JobStatus") for m in jobs]
        total = _batch_total(plain) + sum(_number(d, "DAG_NodesTotal") for d in dagmen)
        done = [m.get("JobStatus") for m in plain].count(4) + max(0, _batch_total(plain) - len(plain)) \
            + sum(_number(d, "DAG_NodesDone") for d in dagmen)
        cells = [done, status.count(2), status.count(1)] + ([status.count(5)] if held else []) + [total]
        numbers = " ".join(f"{n:6d}" if n else "     _" for n in cells)
        lines.append(f"{owner.ljust(width)} {name.ljust(11)} {table.qdate(members[0].get('QDate')):>11} "
                     f"{numbers} {_job_ids(jobs or members)}\n")
    return "".join(lines)


def _number(ad, name: str) -> int:
    value = ad.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _batch_total(members: list) -> int:
    total = 0
    seen = set()
    for m in members:
        cluster = m.get("ClusterId")
        if cluster in seen:
            continue
        seen.add(cluster)
        procs = m.get("TotalSubmitProcs")
        total += procs if isinstance(procs, int) else sum(1 for x in members if x.get("ClusterId") == cluster)
    return total


_TOTAL_KEYS = [(4, "completed"), (3, "removed"), (1, "idle"), (2, "running"), (5, "held"), (7, "suspended")]


def total_line(label: str, statuses: dict[int, int]) -> str:
    jobs = sum(statuses.values())
    return f"Total for {label}: {jobs} jobs; " + ", ".join(f"{statuses.get(s, 0)} {w}" for s, w in _TOTAL_KEYS)


def _counts(ads) -> dict[int, int]:
    out: dict[int, int] = {}
    for ad in ads:
        status = ad.get("JobStatus")
        out[status] = out.get(status, 0) + 1
    return out


def _summary_counts(schedd, constraint: str | None, prefix: str) -> dict[int, int]:
    words = {"Completed": 4, "Removed": 3, "Idle": 1, "Running": 2, "Held": 5, "Suspended": 7}
    summary = schedd.query(constraint, [], opts=QueryOpt.SummaryOnly)
    ad = summary[0] if summary else {}
    return {status: int(ad.get(prefix + word, 0)) for word, status in words.items()}


def totals(opts: Options, schedd, constraint: str | None, ads: list, me: str) -> str:
    """The totals lines: the query's, the caller's (when only theirs were asked for), everyone's."""
    query = _counts(ads) if ads is not None else _summary_counts(schedd, constraint, "")
    lines = [total_line("query", query)]
    mine_only = not (opts.allusers or opts.ids or opts.owners)
    if mine_only:
        mine = pool.owner_clause(me)
        lines.append(total_line(me, query if constraint == mine else _summary_counts(schedd, mine, "")))
    lines.append(total_line("all users", _summary_counts(schedd, None, "Allusers")))
    return ("" if opts.totals else "\n") + " \n".join(lines) + "\n\n"


main = entry(PROG, run, USAGE)
