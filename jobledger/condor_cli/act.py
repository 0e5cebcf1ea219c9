"""condor_rm, condor_hold, condor_release, condor_qedit and condor_reschedule.

    condor_rm [-reason R] [-forcex] [-totals] (cluster | cluster.proc | user | -constraint X | -all)...

Job ids are acted on as a list and each gets HTCondor's line ("Job 3.0
marked for removal", "Job 3.9 not found"); clusters, users, ``-constraint``
and ``-all`` become one constraint and one line ("All jobs in cluster 3 have
been marked for removal").  Anything not done exits 1.
"""

from __future__ import annotations

from jobledger.eventcore.enums import JobAction

from jobledger.condor_cli import pool
from jobledger.condor_cli.args import Args, Failed, Help, Usage, entry, show_version

PAST = {JobAction.Remove: "marked for removal", JobAction.RemoveX: "removed locally (remote state unknown)",
        JobAction.Hold: "held", JobAction.Release: "released", JobAction.Vacate: "vacated",
        JobAction.VacateFast: "fast-vacated"}
PRESENT = {JobAction.Remove: "remove", JobAction.RemoveX: "remove", JobAction.Hold: "hold",
           JobAction.Release: "release", JobAction.Vacate: "vacate", JobAction.VacateFast: "fast-vacate"}
BAD_STATUS = {JobAction.Release: "not held to be released",
              JobAction.RemoveX: "not in `X' state to be forcibly removed",
              JobAction.Vacate: "not running to be vacated", JobAction.VacateFast: "not running to be vacated"}
ALREADY = {JobAction.Hold: "already held", JobAction.Remove: "already marked for removal",
           JobAction.RemoveX: "already marked for forced removal"}


def usage_text(prog: str, action: JobAction) -> str:
    word = PRESENT[action]
    extra = "  -forcex             Force the immediate local removal of jobs in the X state\n" \
        if action is JobAction.Remove else ""
    subcode = "  -subcode number     Set HoldReasonSubCode\n" if action is JobAction.Hold else ""
    return (f"Usage: {prog} [options] [constraints]\n"
            " where [options] is zero or more of:\n"
            "  -help               Display this message and exit\n"
            "  -version            Display version information and exit\n"
            "  -long               Display the full result ClassAd\n"
            "  -totals             Display success/failure totals\n"
            "  -name schedd_name   Connect to the given schedd\n"
            "  -reason reason      Say why (kept in the job ad)\n"
            f"{subcode}{extra}"
            " and where [constraints] is one of:\n"
            f"  cluster.proc        {word} the given job\n"
            f"  cluster             {word} the given cluster of jobs\n"
            f"  user                {word} all jobs owned by user\n"
            f"  -constraint expr    {word} all jobs matching the boolean expression\n"
            f"  -all                {word} all jobs (cannot be used with other constraints)\n"
            f"  -held               {word} only held jobs (with the constraints above)\n")


class Request:
    def __init__(self) -> None:
        self.ids: list[tuple[int, int]] = []
        self.clauses: list[str] = []      # clusters and users: any of them
        self.kinds: list[str] = []        # "cluster C", "user U", "constraint", "all"
        self.constraints: list[str] = []  # -constraint: all of them, and the clusters/users
        self.held = False
        self.reason: str | None = None
        self.subcode: int | None = None
        self.forcex = False
        self.totals = False
        self.long = False
        self.name: str | None = None
        self.pool: str | None = None
        self.bad = False


def parse(argv: list[str], prog: str, action: JobAction) -> Request:
    req = Request()
    args = Args(argv, prog)
    for arg in args:
        if not args.is_flag():
            _job_arg(req, arg)
        elif args.flag("constraint", 1):
            req.constraints.append(args.constraint())
            req.kinds.append("constraint")
        elif args.flag("held", 3) or args.flag("hold", 3):
            req.held = True
        elif args.flag("all", 1):
            req.kinds.append("all")
        elif args.flag("reason", 1) and action is not JobAction.RemoveX:
            req.reason = args.value()
        elif args.flag("subcode", 1) and action is JobAction.Hold:
            try:
                req.subcode = int(args.value())
            except ValueError:
                raise Failed(f"Invalid -subcode {args.current}!") from None
        elif args.flag("forcex", 1) and action is JobAction.Remove:
            req.forcex = True
        elif args.flag("totals", 1):
            req.totals = True
        elif args.flag("long", 1):
            req.long = True
        elif args.flag("name", 1):
            req.name = args.value()
        elif args.flag("pool", 1):
            req.pool = args.value()
        elif args.flag("debug", 1):
            pass
        elif args.flag("version", 1):
            show_version()
        elif args.flag("help", 1):
            raise Help()
        else:
            raise Usage(f"Unrecognized option: {arg}")
    if "all" in req.kinds and (len(req.kinds) > 1 or req.ids):
        raise Failed(f"{prog}: can't mix -all with other constraints")
    if req.held and req.ids:      # held ones among these jobs: one constraint, as HTCondor's tool
        req.clauses += [pool.id_clause(c, p) for c, p in req.ids]
        req.kinds += [f"job {c}.{p}" for c, p in req.ids]
        req.ids = []
    if req.held and not req.kinds:
        req.kinds.append("held")
    if not req.kinds and not req.ids:
        if req.bad:
            raise Failed(status=1)
        raise Usage("You did not specify any jobs", show_usage=False)
    return req


def _job_arg(req: Request, arg: str) -> None:
    if arg[:1].isdigit() or arg[:1] == "-":
        parsed = pool.parse_proc_id(arg)
        if parsed is None:
            head = arg.split(".")[0]
            print(f"Invalid cluster # from {arg}." if not head.isdigit() or int(head) <= 0
                  else f"Warning: unrecognized \"{arg}\" skipped.", file=__import__("sys").stderr)
            req.bad = True
            return
        cluster, proc = parsed
        if cluster <= 0:
            print(f"Invalid cluster # from {arg}.", file=__import__("sys").stderr)
            req.bad = True
        elif proc is None:
            req.clauses.append(f"ClusterId == {cluster}")
            req.kinds.append(f"cluster {cluster}")
        else:
            req.ids.append((cluster, proc))
    else:
        req.clauses.append(pool.owner_clause(arg))
        req.kinds.append(f"user {arg}")


def _describe(kinds: list[str], constraint: str) -> str:
    if len(kinds) == 1:
        kind = kinds[0]
        if kind.startswith("cluster "):
            return f" in cluster {kind[8:]}"
        if kind.startswith("user "):
            return f" of user {kind[5:]}"
        if kind in ("all", "held"):
            return ""
    return f" matching constraint ({constraint})"


def constraint_of(req: Request) -> str:
    """Clusters and users (any), and every -constraint, as HTCondor's tool joins them."""
    if "all" in req.kinds:
        return "ClusterId >= 0"
    picks = " || ".join(req.clauses)
    parts = req.constraints + ([picks] if picks else [])
    if not parts:
        return "true"
    return parts[0] if len(parts) == 1 else " && ".join(f"({p})" for p in parts)


def act(req: Request, action: JobAction, prog: str) -> int:
    schedd = pool.schedd(req.name, req.pool)
    if req.forcex:
        action = JobAction.RemoveX
    reason = req.reason if req.reason is not None else f"via {prog}"
    if req.subcode is not None:
        reason = (reason, req.subcode)
    failed = req.bad
    if req.ids:
        failed |= _act_ids(schedd, action, req, reason)
    if req.kinds:
        failed |= _act_constraint(schedd, action, req, reason, prog)
    if action is JobAction.Release and not failed:
        schedd.reschedule()
    return 1 if failed else 0


def _result_line(result, req: Request) -> None:
    if req.long:
        print(result.printOld())
    elif req.totals:
        print(f"{result['TotalSuccess']} Succeeded, {result['TotalError']} Failed, "
              f"{result['TotalNotFound']} Not Found, {result['TotalBadStatus']} Bad Status, "
              f"{result['TotalAlreadyDone']} Already Done, {result['TotalPermissionDenied']} Permission Denied")


def _act_ids(schedd, action: JobAction, req: Request, reason) -> bool:
    """Act on the listed jobs; one line each, as HTCondor's per-job results read."""
    import sys
    status = {f"{ad['ClusterId']}.{ad['ProcId']}": ad.get("JobStatus")
              for ad in schedd.query(pool.join_any([pool.id_clause(c, p) for c, p in req.ids]),
                                     ["ClusterId", "ProcId", "JobStatus"])}
    lines, todo = [], []
    for text in (f"{c}.{p}" for c, p in req.ids):
        state = status.get(text)
        if state is None:
            lines.append((False, f"Job {text} not found"))
        elif _already(action, state):
            lines.append((False, f"Job {text} {ALREADY.get(action, PAST[action])}"))
        elif action in BAD_STATUS and not _eligible(action, state):
            lines.append((False, f"Job {text} {BAD_STATUS[action]}"))
        else:
            lines.append((True, f"Job {text} {PAST[action]}"))
            todo.append(text)
    if todo:
        result = schedd.act(action, todo, reason)
        _result_line(result, req)
    for ok, line in lines:
        print(line, file=sys.stdout if ok else sys.stderr)
    return not all(ok for ok, _ in lines)


def _already(action: JobAction, status) -> bool:
    return (action is JobAction.Hold and status == 5) or (action is JobAction.Remove and status == 3)


def _eligible(action: JobAction, status) -> bool:
    if action in (JobAction.Vacate, JobAction.VacateFast):
        return status in (2, 6)          # running or transferring output
    return status == 5 if action is JobAction.Release else status == 3


def _act_constraint(schedd, action: JobAction, req: Request, reason, prog: str) -> bool:
    import sys
    chosen = constraint_of(req)
    what = _describe(req.kinds, chosen)
    constraint = chosen
    if req.held:
        constraint = "JobStatus == 5" if chosen == "true" else f"{chosen} && (JobStatus == 5)"
    result = schedd.act(action, constraint, reason)
    _result_line(result, req)
    jobs = "held jobs" if req.held else "jobs"
    if result["TotalSuccess"]:
        print(f"All {jobs}{what} have been {PAST[action]}")
        return False
    if not schedd.query("true", ["ClusterId"], limit=1):
        print("There are no jobs in the queue", file=sys.stderr)
        return False
    print(f"Couldn't find/{PRESENT[action]} all {jobs}{what}", file=sys.stderr)
    return True


def _command(prog: str, action: JobAction):
    def run(argv: list[str]) -> int:
        return act(parse(argv, prog, action), action, prog)
    return entry(prog, run, usage_text(prog, action), help_to="stderr")


rm = _command("condor_rm", JobAction.Remove)
hold = _command("condor_hold", JobAction.Hold)
release = _command("condor_release", JobAction.Release)


# -- condor_qedit ------------------------------------------------------------------

QEDIT_USAGE = """\
Usage: condor_qedit [general-opts] {cluster | cluster.proc | owner | -constraint constraint} attribute-name attribute-value ...
    [general-opts] are
\t-name <name>\t\tthe schedd to edit jobs of
\t-debug\t\t\tprint debugging output
"""


def qedit(argv: list[str]) -> int:
    args = Args(argv, "condor_qedit")
    name = None
    constraint = None
    rest: list[str] = []
    for arg in args:
        if rest or not args.is_flag():
            rest.append(arg)
        elif args.flag("constraint", 1):
            constraint = args.constraint()
        elif args.flag("name", 1):
            name = args.value()
        elif args.flag("debug", 1) or args.flag("long", 1):
            pass
        elif args.flag("help", 1):
            raise Help()
        else:
            raise Usage()
    if constraint is None:
        if not rest:
            raise Usage()
        target = rest.pop(0)
        parsed = pool.parse_proc_id(target)
        constraint = pool.id_clause(*parsed) if parsed else pool.owner_clause(target)
        if parsed is None and target[:1].isdigit():
            raise Failed(f"Invalid job id {target}")
    pairs = _edits(rest)
    from jobledger.eventcore.classad import ExprTree
    for attr, value in pairs:
        try:
            ExprTree(value)
        except Exception:
            raise Failed(f"Update aborted, illegal value: {value}") from None
    schedd = pool.schedd(name)
    if not schedd.query(constraint, ["ClusterId"], limit=1):
        raise Failed(f"No jobs match the constraint: {constraint}")
    for attr, value in pairs:
        count = schedd.edit(constraint, attr, value)
        print(f"Set attribute \"{attr}\" for {count} matching jobs.")
    return 0


def _edits(words: list[str]) -> list[tuple[str, str]]:
    """``attr value`` pairs, or ``attr=value`` in one word (as condor_qedit splits them)."""
    pairs = []
    words = list(words)
    while words:
        word = words.pop(0)
        if "=" in word and not word.startswith("="):
            attr, _, value = word.partition("=")
            pairs.append((attr.strip(), value.strip()))
        elif words:
            pairs.append((word, words.pop(0)))
        else:
            raise Failed(f"condor_qedit : expression required after attribute {word}")
    if not pairs:
        raise Failed("condor_qedit : Error - no attributes specifed.")
    return pairs


qedit_main = entry("condor_qedit", qedit, QEDIT_USAGE)


# -- condor_reschedule ---------------------------------------------------------------

RESCHEDULE_USAGE = """\
Usage: condor_reschedule [general-opts] [-name <name> | <name>]
\t-name <name>\tthe schedd to ask for a negotiation cycle
"""


def reschedule(argv: list[str]) -> int:
    args = Args(argv, "condor_reschedule")
    name = None
    for arg in args:
        if not args.is_flag():
            name = arg
        elif args.flag("name", 1):
            name = args.value()
        elif args.flag("debug", 1):
            pass
        elif args.flag("help", 1):
            raise Help()
        else:
            raise Usage()
    ad = pool.schedd_ad(name)
    from jobledger.daemons.client.api import Schedd
    Schedd(ad).reschedule()
    print(f"Sent \"Reschedule\" command to local schedd" if name is None else
          f"Sent \"Reschedule\" command to schedd {ad.get('Name')}")
    return 0


reschedule_main = entry("condor_reschedule", reschedule, RESCHEDULE_USAGE, help_to="stderr")
