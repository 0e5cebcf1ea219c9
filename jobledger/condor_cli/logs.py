"""condor_wait, condor_userlog and condor_tail: the commands that read jobs' files.

``condor_wait [-wait S] [-num N] [-status] [-echo] LOG [JOB]`` follows a user
log (``tracking.jobeventlog``) until the jobs in it (or JOB: a cluster or
cluster.proc) have terminated or aborted: "All jobs done." exit 0, or
"Time expired." exit 1.  ``condor_userlog LOG...`` prints HTCondor's
per-allocation, per-host and per-job statistics.  ``condor_tail JOB`` the
end of a running job's output (the jobs of a personal pool write it in
place, so the file is read directly).
"""

from __future__ import annotations

import os
import sys
import time

from jobledger.eventcore.errors import HTCondorException, UserLogError
from jobledger.eventcore.events import EventType

from jobledger.condor_cli import pool, table
from jobledger.condor_cli.args import Args, Failed, Help, Usage, entry

WAIT_USAGE = """\

Use: condor_wait [options] <log-file> [job-number]
Where options are:
    -help             Display options
    -version          Display HTCondor version
    -debug            Show the progress of the log
    -status           Show each job's submit, execute and end
    -echo             Print the events
    -wait <seconds>   Wait at most this long
    -num <number>     Wait until this many jobs end
"""

_ENDS = {EventType.JOB_TERMINATED: "completed", EventType.JOB_ABORTED: "aborted"}


def _job_filter(text: str | None):
    if text is None:
        return lambda cluster, proc: True
    parsed = pool.parse_proc_id(text.rsplit(".0", 1)[0] if text.count(".") == 2 else text)
    if parsed is None:
        raise Failed(f"Couldn't understand job number: {text}")
    cluster, proc = parsed
    return lambda c, p: c == cluster and (proc is None or p == proc)


def wait(argv: list[str]) -> int:
    args = Args(argv, "condor_wait")
    seconds = None
    count = None
    status = echo = False
    positional: list[str] = []
    for arg in args:
        if not args.is_flag():
            positional.append(arg)
        elif args.flag("wait", 1):
            seconds = args.int_value()
        elif args.flag("num", 1):
            count = args.int_value()
            if count <= 0:
                raise Failed("-num must be greater than zero")
        elif args.flag("status", 1) or args.flag("debug", 1):
            status = True
        elif args.flag("echo", 1):
            echo = True
        elif args.flag("version", 1):
            from jobledger.daemons.client.api import platform, version
            print(f"{version()}\n{platform()}")
            return 0
        elif args.flag("help", 1):
            raise Help()
        else:
            raise Usage()
    if not positional or len(positional) > 2:
        raise Usage(f"Extra argument: {positional[2]}\n" if len(positional) > 2 else "")
    wanted = _job_filter(positional[1] if len(positional) == 2 else None)
    return _follow(positional[0], wanted, seconds, count, status, echo, len(positional) == 2)


class _Progress:
    """What condor_wait has seen of the jobs it watches."""

    def __init__(self, wanted, count, status: bool, echo: bool):
        self.wanted, self.count, self.status, self.echo = wanted, count, status, echo
        self.active: set[tuple[int, int]] = set()
        self.seen = self.ended = 0

    def feed(self, event) -> bool:
        """Take one event; True once -num jobs have ended."""
        key = (event.cluster, event.proc)
        if not self.wanted(*key):
            return False
        if self.echo:
            sys.stdout.write(str(event))
        name = f"{event.cluster}.{event.proc}.0"
        if event.type == EventType.SUBMIT:
            self.active.add(key)
            self.seen += 1
            self._say(f"{name} submitted")
        elif event.type == EventType.EXECUTE:
            self._say(f"{name} executing on host {event.get('ExecuteHost', '')}")
        elif event.type in _ENDS and key in self.active:
            self.active.discard(key)
            self.ended += 1
            self._say(f"{name} {_ENDS[event.type]}")
            return self.count is not None and self.ended >= self.count
        return False

    def _say(self, text: str) -> None:
        if self.status:
            print(text)


def _follow(path: str, wanted, seconds, count, status: bool, echo: bool, one_job: bool) -> int:
    from jobledger.tracking.jobeventlog import JobEventLog
    try:
        log = JobEventLog(path, errors="ignore")
    except HTCondorException as exc:
        raise Failed(f"Couldn't open {path}: {_reason(exc)}") from None
    deadline = None if seconds is None else time.monotonic() + seconds
    progress = _Progress(wanted, count, status, echo)
    pause = 0.0                      # the first pass reads what is there now
    with log:
        while True:
            try:
                for event in log.events(stop_after=pause):
                    if progress.feed(event):
                        print(f"Specifed number of jobs ({count}) done.")
                        return 0
            except UserLogError as exc:
                raise Failed(f"ERROR: {exc}") from None
            if progress.seen and not progress.active:
                print("All jobs done.")
                return 0
            if not progress.seen and pause == 0.0:
                raise Failed("This log does not mention that job!" if one_job else
                             "This log does not mention any jobs!")
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                print("Time expired.")
                return 1
            pause = 1.0 if left is None else max(0.001, min(1.0, left))


def _reason(exc: Exception) -> str:
    text = str(exc)
    return text.split(": ", 1)[1].rsplit(":", 1)[0] if ": " in text else text


wait_main = entry("condor_wait", wait, WAIT_USAGE, help_to="stderr")


# -- condor_userlog ------------------------------------------------------------------

USERLOG_USAGE = """\
usage: condor_userlog [-help] [-total | -raw] [-debug] [-evict] [-j cluster | -j cluster.proc] [-all] [-hostname] logfile ...
\t-help: this message
\t-total: only print the totals
\t-raw: print the raw allocation data
\t-evict: only count allocations that ended in an eviction
\t-j: only the allocations of this cluster or job
\t-all: every job (the default)
\t-hostname: show host names, not IP addresses
"""

_ALLOCATION_ENDS = {EventType.JOB_TERMINATED, EventType.JOB_EVICTED, EventType.EXECUTABLE_ERROR,
                    EventType.SHADOW_EXCEPTION, EventType.JOB_RECONNECT_FAILED}


def usage_seconds(text) -> int:
    """User + system seconds of a ``Usr D HH:MM:SS, Sys D HH:MM:SS`` usage string."""
    total = 0
    for part in str(text or "").split(","):
        words = part.split()
        if len(words) == 3:
            hours, minutes, seconds = (int(x) for x in words[2].split(":"))
            total += int(words[1]) * 86400 + hours * 3600 + minutes * 60 + seconds
    return total


def hours_minutes(seconds: int) -> str:
    """HTCondor's format_time_nosecs: ``DDD+HH:MM``."""
    if seconds < 0:
        return "[?????]"
    return f"{seconds // 86400:3d}+{seconds % 86400 // 3600:02d}:{seconds % 3600 // 60:02d}"


class Allocations:
    """The allocations (execute ... end) of the jobs in user logs, and their statistics."""

    def __init__(self, wanted, evict_only: bool, totals_only: bool, out):
        self.wanted, self.evict_only, self.totals_only, self.out = wanted, evict_only, totals_only, out
        self.running: dict[tuple[int, int], tuple[int, str]] = {}
        self.jobs: dict[tuple[int, int], list[int]] = {}
        self.hosts: dict[str, list[int]] = {}
        self.header = False

    def feed(self, event) -> None:
        key = (event.cluster, event.proc)
        if not self.wanted(*key):
            return
        if event.type == EventType.EXECUTE:
            self.running[key] = (event.timestamp, str(event.get("ExecuteHost", "")))
        elif event.type in _ALLOCATION_ENDS and key in self.running:
            start, host = self.running.pop(key)
            wall = event.timestamp - start
            if event.type == EventType.JOB_TERMINATED:
                if not self.evict_only:
                    self._record(key, start, event.timestamp, wall, usage_seconds(event.get("RunRemoteUsage")),
                                 host)
            else:
                self._record(key, start, event.timestamp, 0, 0, host)

    def _record(self, key, start: int, end: int, good: int, cpu: int, host: str) -> None:
        wall = end - start
        if wall < 0:
            return
        address = host.lstrip("<").split(":")[0] or "?"
        for stats in (self.jobs.setdefault(key, [0, 0, 0, 0, 0]), self.hosts.setdefault(address, [0, 0, 0, 0, 0])):
            stats[0] += 1
            stats[1] += wall != good
            stats[2] += wall
            stats[3] += good
            stats[4] += cpu
        if self.totals_only:
            return
        if not self.header:
            self.out.write("\n%-8.8s %-15.15s %-11.11s %-11.11s %9s %9s %9s\n" % (
                "Job", "Host", "Start Time", "Evict Time", "Wall Time", "Good Time", "CPU Usage"))
            self.header = True
        self.out.write("%-8.8s %-15.15s %11s %11s %9s %9s %9s\n" % (
            f"{key[0]}.{key[1]}", address, table.qdate(start), table.qdate(end), hours_minutes(wall),
            hours_minutes(good), hours_minutes(cpu)))

    def statistics(self) -> str:
        lines = ["%-15.15s %9.9s %9.9s %9.9s %9.9s %9.9s %7.7s %6.6s" % (
            "Host/Job", "Wall Time", "Good Time", "CPU Usage", "Avg Alloc", "Avg Lost", "Goodput", "Util."), ""]
        lines += [_stat_line(host, s) for host, s in self.hosts.items()]
        lines.append("")
        lines += [_stat_line(f"{c}.{p}", s) for (c, p), s in sorted(self.jobs.items())]
        every = [sum(s[i] for s in self.jobs.values()) for i in range(5)]
        lines += ["", _stat_line("Total", every)]
        return "\n".join(lines) + "\n"


def _stat_line(label: str, s: list[int]) -> str:
    allocations, kills, wall, good, cpu = s
    average = hours_minutes(wall // allocations) if allocations else "0+00:00"
    lost = hours_minutes((wall - good) // kills) if kills else "0+00:00"
    goodput = good / wall * 100 if wall else 0.0
    util = cpu / good * 100 if good else 0.0
    return "%-15.15s %9.9s %9.9s %9.9s %9.9s %9.9s %6.1f%% %5.1f%%" % (
        label, hours_minutes(wall), hours_minutes(good), hours_minutes(cpu), average, lost, goodput, util)


def userlog(argv: list[str]) -> int:
    from jobledger.eventcore.errors import UserLogReadError
    from jobledger.tracking.jobeventlog import JobEventLog
    args = Args(argv, "condor_userlog")
    files: list[str] = []
    wanted = _job_filter(None)
    totals_only = evict_only = False
    for arg in args:
        if not args.is_flag():
            files.append(arg)
        elif args.flag("help", 1):          # -h..., but -ho... is -hostname
            raise Help()
        elif args.flag("total", 1):
            totals_only = True
        elif args.flag("evict", 1):
            evict_only = True
        elif args.flag("j", 1):
            wanted = _job_filter(args.value())
        elif args.flag("all", 1) or args.flag("raw", 1) or args.flag("debug", 1) or args.flag("hostname", 1):
            pass
        else:
            raise Usage()
    if not files:
        raise Usage()
    allocations = Allocations(wanted, evict_only, totals_only, sys.stdout)
    for path in files:
        if not os.access(path, os.R_OK):
            raise Failed(f"Can't access file: {path} (errno={_errno(path)})")
        try:
            with JobEventLog(path, errors="raise") as log:
                for event in log.events(stop_after=0):
                    allocations.feed(event)
        except UserLogReadError:
            # HTCondor's condor_userlog on a file that is not a user log (or an event it cannot
            # read): this line on stderr, no totals, and exit status 0 -- its exit(0), kept.
            sys.stdout.flush()
            print("Error: unable to read log file.", file=sys.stderr)
            return 0
    sys.stdout.write("\n" + allocations.statistics())
    return 0


def _errno(path: str) -> int:
    try:
        os.stat(path)
    except OSError as exc:
        return exc.errno or 0
    return 13


userlog_main = entry("condor_userlog", userlog, USERLOG_USAGE, help_to="stderr")


# -- condor_tail --------------------------------------------------------------------

TAIL_USAGE = """\
Usage: condor_tail [options] job-ID [filename ...]
\t-help\t\t\tThis message
\t-maxbytes <n>\t\tPrint at most the last <n> bytes (default 1024)
\t-f | -follow\t\tKeep printing what the job writes until it stops running
\t-no-stdout\t\tDo not print the job's standard output
\t-stderr\t\t\tPrint the job's standard error
"""


def tail(argv: list[str]) -> int:
    args = Args(argv, "condor_tail")
    maxbytes, follow, stdout, stderr = 1024, False, True, False
    positional: list[str] = []
    for arg in args:
        if not args.is_flag():
            positional.append(arg)
        elif args.flag("maxbytes", 1):
            maxbytes = args.int_value()
        elif args.flag("follow", 1) or arg == "-f":
            follow = True
        elif args.flag("no-stdout", 3):
            stdout = False
        elif args.flag("stderr", 3):
            stderr = True
        elif args.flag("auto-retry", 2) or args.flag("debug", 1):
            pass
        elif args.flag("help", 1):
            raise Help()
        else:
            raise Usage()
    if not positional:
        raise Usage()
    parsed = pool.parse_proc_id(positional[0])
    if parsed is None or parsed[1] is None:
        raise Failed(f"Invalid job id: {positional[0]}")
    schedd = pool.schedd()
    ads = schedd.query(pool.id_clause(*parsed), ["Iwd", "Out", "Err", "JobStatus"])
    if not ads:
        raise Failed(f"Job {positional[0]} not found")
    ad = ads[0]
    if ad.get("JobStatus") != 2:
        raise Failed(f"Job {positional[0]} is not running")
    names = positional[1:] or ([ad.get("Out")] if stdout else []) + ([ad.get("Err")] if stderr else [])
    paths = [os.path.join(str(ad.get("Iwd", "")), str(name)) for name in names if name]
    for path in paths:
        _print_tail(path, maxbytes)
    while follow and schedd.query(pool.id_clause(*parsed) + " && JobStatus == 2", ["ProcId"]):
        time.sleep(1.0)
        for path in paths:
            _print_new(path)
    return 0


_offsets: dict[str, int] = {}


def _print_tail(path: str, maxbytes: int) -> None:
    _offsets[path] = 0
    _print_new(path, maxbytes)


def _print_new(path: str, maxbytes: int | None = None) -> None:
    """What the file gained since the last print (its last ``maxbytes`` at most), a chunk at a
    time and no further than its size now: a job writing on, or a device, is not read for ever."""
    from jobledger.daemons.input_files import CHUNK_BYTES, open_input
    try:
        with open_input(path) as fh:
            size = os.fstat(fh.fileno()).st_size
            start = _offsets.get(path, 0) if maxbytes is None else max(0, size - maxbytes)
            fh.seek(start)
            while start < size:
                data = fh.read(min(CHUNK_BYTES, size - start))
                if not data:
                    break
                start += len(data)
                _write(data)
            _offsets[path] = start
    except FileNotFoundError:
        return
    except OSError as exc:
        raise Failed(f"condor_tail: cannot read {path}: {exc.strerror or exc}") from None


def _write(data: bytes) -> None:
    """The job's bytes as they are (text when stdout has no byte buffer)."""
    sys.stdout.flush()
    raw = getattr(sys.stdout, "buffer", None)
    if raw is None:
        sys.stdout.write(data.decode("utf-8", "replace"))
    else:
        raw.write(data)
    sys.stdout.flush()


tail_main = entry("condor_tail", tail, TAIL_USAGE, help_to="stderr")
