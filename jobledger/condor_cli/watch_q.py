"""condor_watch_q: follow jobs through their user logs, one table row per batch.

The jobs are found as HTCondor's tool finds them: ``-files`` names the logs,
else the schedd is asked for the ``UserLog`` of the jobs of ``-users`` (you,
by default), ``-clusters`` or ``-batches``.  The logs are read by the
project's user-log tracker (``tracking.userlogs``).  Each refresh prints the
table (BATCH, the state columns that are not all zero, TOTAL, JOB_IDS and a
progress bar per row: ``-`` idle, ``=`` running, ``#`` done, ``!`` held or
removed), the total progress bar, the summary line and "Updated at".
``-exit all,done[,STATUS]`` stops when the condition holds ("Exiting with
code STATUS because of condition "all done" at ...").
"""

from __future__ import annotations

import datetime
import os
import shutil
import sys
import time

from jobledger.eventcore.ids import JobId

from jobledger.condor_cli import pool
from jobledger.condor_cli.args import Args, Help, Usage, entry

PROG = "condor_watch_q"

USAGE = f"""\
usage: {PROG} [-help] [-debug] [-users USER [USER ...]] [-clusters CLUSTER_ID [CLUSTER_ID ...]]
                      [-files FILE [FILE ...]] [-batches BATCH_NAME [BATCH_NAME ...]]
                      [-collector COLLECTOR] [-schedd SCHEDD] [-exit GROUPER,JOB_STATUS[,EXIT_STATUS]]
                      [-interval N] [-groupby {{batch,log,cluster}}] [-table | -no-table]
                      [-progress | -no-progress] [-row-progress | -no-row-progress]
                      [-summary | -no-summary] [-summary-type {{totals,percentages}}]
                      [-updated-at | -no-updated-at] [-abbreviate | -no-abbreviate]
                      [-color | -no-color] [-refresh | -no-refresh]
"""

# condor_watch_q's state names, in its column order; jobledger JobStatus -> name
ORDER = ["REMOVED", "HELD", "SUSPENDED", "IDLE", "INPUT", "RUN", "OUTPUT", "DONE"]
STATE_OF = {1: "IDLE", 2: "RUN", 3: "REMOVED", 4: "DONE", 5: "HELD", 6: "OUTPUT", 7: "SUSPENDED"}
ACTIVE = {"IDLE", "INPUT", "RUN", "OUTPUT", "HELD", "SUSPENDED"}
ALWAYS = {"IDLE", "RUN", "DONE", "TOTAL"}
BAR = [("IDLE", "-"), ("INPUT", ">"), ("RUN", "="), ("OUTPUT", ">"), ("DONE", "#"), ("HELD", "!"),
       ("SUSPENDED", "!"), ("REMOVED", "!")]
CHECKS = {"active": lambda s: s in ACTIVE, "done": lambda s: s == "DONE", "idle": lambda s: s == "IDLE",
          "held": lambda s: s == "HELD"}
GROUPERS = {"all": all, "any": any, "none": lambda states: not any(states)}
SUMMARY = [(["DONE"], "completed"), (["REMOVED"], "removed"), (["IDLE"], "idle"),
           (["INPUT", "RUN", "OUTPUT"], "running"), (["HELD"], "held"), (["SUSPENDED"], "suspended")]


class Options:
    def __init__(self) -> None:
        self.users: list[str] | None = None
        self.clusters: list[int] | None = None
        self.files: list[str] | None = None
        self.batches: list[str] | None = None
        self.schedd: str | None = None
        self.exits: list[tuple[str, str, int]] = []
        self.interval = 0.5
        self.groupby = "batch"
        self.show = {"table": True, "progress": True, "row-progress": True, "summary": True,
                     "updated-at": True, "refresh": sys.stdout.isatty(), "color": False}
        self.summary_type = "totals"


def parse(argv: list[str]) -> Options:
    opts = Options()
    args = Args(argv, PROG)
    for arg in args:
        if args.flag("users", 2):
            opts.users = _many(args)
        elif args.flag("clusters", 3):
            try:
                opts.clusters = [int(c) for c in _many(args)]
            except ValueError:
                raise Usage(f"{PROG}: error: -clusters takes cluster ids") from None
        elif args.flag("files", 2):
            opts.files = _many(args)
        elif args.flag("batches", 2):
            opts.batches = _many(args)
        elif args.flag("schedd", 3) or args.flag("collector", 3):
            value = args.value()
            opts.schedd = value if args.flag("schedd", 3) else opts.schedd
        elif args.flag("exit", 2):
            opts.exits.append(_exit_condition(args.value()))
        elif args.flag("interval", 2):
            try:
                opts.interval = float(args.value())
            except ValueError:
                raise Usage(f"{PROG}: error: -interval takes a number of seconds") from None
        elif args.flag("groupby", 2):
            opts.groupby = args.value()
            if opts.groupby not in ("batch", "log", "cluster"):
                raise Usage(f"{PROG}: error: -groupby is one of batch, log, cluster")
        elif args.flag("summary-type", 9):
            opts.summary_type = args.value()
        elif _toggle(opts, arg):
            pass
        elif args.flag("debug", 2) or args.flag("abbreviate", 2) or args.flag("no-abbreviate", 4) \
                or args.flag("display-exited", 3) or args.flag("no-display-exited", 5) \
                or args.flag("exit-on-key-press", 6) or args.flag("no-exit-on-key-press", 8):
            pass
        elif args.flag("help", 1):
            raise Help()
        else:
            raise Usage(f"{PROG}: error: unrecognized arguments: {arg}")
    return opts


def _many(args) -> list[str]:
    words = args.words()
    if not words:
        raise Usage(f"{PROG}: error: argument {args.current}: expected at least one argument")
    return words


def _toggle(opts: Options, arg: str) -> bool:
    word = arg.lstrip("-")
    negative = word.startswith("no-")
    name = word[3:] if negative else word
    if name in opts.show:
        opts.show[name] = not negative
        return True
    return False


def _exit_condition(text: str) -> tuple[str, str, int]:
    parts = text.split(",")
    if len(parts) not in (2, 3):
        raise Usage(f"{PROG}: error: invalid -exit specification")
    grouper, status = parts[0].lower(), parts[1].lower()
    if grouper not in GROUPERS:
        raise Usage(f'{PROG}: error: invalid GROUPER "{grouper}", must be one of {{all, any, none}}')
    if status not in CHECKS:
        raise Usage(f'{PROG}: error: invalid JOB_STATUS "{status}", must be one of '
                    "{active, done, idle, held}")
    try:
        code = int(parts[2]) if len(parts) == 3 else 0
    except ValueError:
        raise Usage(f'{PROG}: error: exit_status must be an integer, but was "{parts[2]}"') from None
    return grouper, status, code


def discover(opts: Options) -> tuple[list[str], dict[int, str], dict[int, int], set[int] | None]:
    """The user logs to follow, each cluster's batch name and number of procs, and the
    clusters to show (None: every job in the logs)."""
    only = set(opts.clusters) if opts.clusters else None
    if opts.files:
        return [os.path.abspath(f) for f in opts.files], {}, {}, only
    users = opts.users
    if users is None and opts.clusters is None and opts.batches is None:
        users = [pool.user_name()]
    clauses = [pool.owner_clause(u) for u in users or []]
    clauses += [f"ClusterId == {c}" for c in opts.clusters or []]
    clauses += [f"JobBatchName == {pool.quote(b)}" for b in opts.batches or []]
    schedd = pool.schedd(opts.schedd)
    logs: list[str] = []
    names: dict[int, str] = {}
    procs: dict[int, int] = {}
    for ad in schedd.query(pool.join_any(clauses), ["ClusterId", "UserLog", "Iwd", "JobBatchName",
                                                    "TotalSubmitProcs"]):
        log = ad.get("UserLog")
        if isinstance(log, str) and log:
            path = os.path.join(str(ad.get("Iwd", "")), log)
            if path not in logs:
                logs.append(path)
        cluster = ad.get("ClusterId")
        if isinstance(ad.get("JobBatchName"), str):
            names[cluster] = ad["JobBatchName"]
        if isinstance(ad.get("TotalSubmitProcs"), int):
            procs[cluster] = ad["TotalSubmitProcs"]
        if opts.batches:
            only = (only or set()) | {cluster}
    return logs, names, procs, only


def rows(states: dict[JobId, int], opts: Options, names: dict[int, str], procs: dict[int, int],
         logs_of: dict[int, str]) -> tuple[list[dict], dict]:
    """One row per group (batch, log or cluster): counts per state, TOTAL, JOB_IDS."""
    key = {"batch": "BATCH", "log": "LOG", "cluster": "CLUSTER"}[opts.groupby]
    groups: dict[str, dict[int, list]] = {}
    for job, status in sorted(states.items()):
        label = {"BATCH": names.get(job.cluster) or f"ID: {job.cluster}",
                 "LOG": logs_of.get(job.cluster, "?"), "CLUSTER": str(job.cluster)}[key]
        groups.setdefault(label, {}).setdefault(job.cluster, []).append((job, STATE_OF.get(status, "IDLE")))
    out, totals = [], {s: 0 for s in ORDER + ["TOTAL"]}
    for label, clusters in groups.items():
        row = {s: 0 for s in ORDER}
        active = []
        total = 0
        for cluster, jobs in clusters.items():
            total += max(procs.get(cluster, 0), len(jobs))
            for job, state in jobs:
                row[state] += 1
                if state in ACTIVE:
                    active.append(job)
        row["TOTAL"] = total
        ids = [f"{j.cluster}.{j.proc}" for j in active]
        row["JOB_IDS"] = " ... ".join([ids[0], ids[-1]]) if len(ids) > 2 else ", ".join(ids)
        row[key] = label
        for state in ORDER + ["TOTAL"]:
            totals[state] += row[state]
        out.append(row)
    return out, totals


def table(rows_: list[dict], key: str, width: int, row_progress: bool) -> list[str]:
    """HTCondor's table: empty state columns dropped, cells padded, joined by two spaces."""
    keep = [s for s in ORDER if s in ALWAYS or any(r[s] for r in rows_)]
    headers = [key] + keep + ["TOTAL", "JOB_IDS"]
    cells = [[str(r.get(h) or "-") + " " if h not in (key, "JOB_IDS") else str(r.get(h, "")) + " "
              for h in headers] for r in rows_]
    widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, h in enumerate(headers)]
    left = {key, "JOB_IDS"}

    def line(values) -> str:
        return "  ".join(v.ljust(w) if h in left else v.rjust(w) for v, w, h in zip(values, widths, headers))
    lines = [line(headers).rstrip()] + [line(c) for c in cells]
    room = width - len(lines[1]) if len(lines) > 1 else width
    if row_progress and room > 10:
        lines[1:] = [text + progress_bar(r, room) for text, r in zip(lines[1:], rows_)]
    else:
        lines = [text[:width] for text in lines]
    return lines


def progress_bar(counts: dict, width: int) -> str:
    width = min(width, 79) - 2
    total = float(counts.get("TOTAL", 0))
    lengths = [int(width * (counts.get(s, 0) / total)) if total else 0 for s, _ in BAR]
    biggest = max(range(len(lengths)), key=lambda i: lengths[i])
    lengths[biggest] += width - sum(lengths)
    return "[" + "".join(char * n for (_, char), n in zip(BAR, lengths)) + "]"


def summary(totals: dict, kind: str) -> str:
    parts = []
    for states, word in SUMMARY:
        count = sum(totals.get(s, 0) for s in states)
        if kind == "percentages":
            share = round(100.0 * count / totals["TOTAL"]) if totals["TOTAL"] else 0
            parts.append(f"{share}% {word}")
        elif count:
            parts.append(f"{count} {word}")
    return f"Total: {totals['TOTAL']} jobs; " + ", ".join(parts)


def screen(states, opts: Options, names, procs, logs_of, now: str) -> str:
    width = shutil.get_terminal_size().columns
    key = {"batch": "BATCH", "log": "LOG", "cluster": "CLUSTER"}[opts.groupby]
    found, totals = rows(states, opts, names, procs, logs_of)
    msg: list[str] = []
    if opts.show["table"]:
        msg += table(found, key, width, opts.show["row-progress"]) + [""]
    if opts.show["progress"]:
        msg += ["Total Progress: " + progress_bar(totals, width - 16), ""]
    if opts.show["summary"]:
        msg += [summary(totals, opts.summary_type), ""]
    if opts.show["updated-at"]:
        msg += [f"Updated at {now}", ""]
    return "\n".join(msg[:-1])


def run(argv: list[str]) -> int:
    opts = parse(argv)
    logs, names, procs, only = discover(opts)
    if not logs:
        print("WARNING: No jobs found, exiting...", file=sys.stderr)
        return 0
    from jobledger.tracking.userlogs import UserLogTracker
    from jobledger.cli.watch import drain
    tracker = UserLogTracker([log for log in logs if os.path.exists(log)] or logs, interval=opts.interval)
    shown = None
    try:
        with tracker:
            while True:
                drain(tracker)
                states = {JobId(c, p): status for c, p, status, _ in tracker.states.brief()
                          if only is None or c in only}
                now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")
                text = screen(states, opts, names, procs, {}, now)
                body = text.rsplit("\nUpdated at ", 1)[0]
                if body != shown:
                    if opts.show["refresh"] and shown is not None:
                        sys.stdout.write(f"\x1b[{shown.count(chr(10)) + 2}F\x1b[J")
                    print(text, flush=True)
                    shown = body
                for grouper, status, code in opts.exits:
                    if states and GROUPERS[grouper](CHECKS[status](STATE_OF.get(s, "IDLE"))
                                                    for s in states.values()):
                        print(f'Exiting with code {code} because of condition "{grouper} {status}" at {now}')
                        return code
                time.sleep(opts.interval)
    except KeyboardInterrupt:
        return 0


main = entry(PROG, run, USAGE)
