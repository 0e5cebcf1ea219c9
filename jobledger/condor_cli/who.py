"""condor_who: the pool's daemons as this machine's master sees them.

``-quick`` (also the form ``-wait`` prints) writes the master's ready ad as
``KEY = value`` lines: ``<DAEMON> = "Alive"`` (or ``"Dead"``/``"Hold"``) and
``<DAEMON>_PID`` for the master and each daemon of DAEMON_LIST, ``IsReady``
(every daemon started and answering as up), and ``STARTD_State`` (``"Ready"``
once the startd is up).  ``-wait[:N] [EXPR]`` waits up to N seconds (default
forever) for EXPR (default ``IsReady``) to be true of that ad, then prints it;
exit status 1 if it never was.  ``-daemons`` prints a table of the daemons
(name, alive, pid, parent pid, exit status, address, executable).

The master is found through ``$(RUN)/master.pid`` and its socket, not the
collector, so condor_who answers while the collector is still starting.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from jobledger.daemons import ipc
from jobledger.daemons.config_files import param
from jobledger.eventcore.classad import ClassAd, ExprTree
from jobledger.eventcore.errors import ClassAdError, HTCondorException

from jobledger.condor_cli import pool
from jobledger.condor_cli.args import Args, Failed, Help, Usage, entry

USAGE = """\
Usage: condor_who [options]
    where [options] are
\t-help\t\t\tThis screen
\t-quick\t\t\tThe master's ready ad as KEY = value lines
\t-daemons\t\tA table of the daemons: alive, pid, parent, exit, address
\t-wait[:<seconds>] [<expr>]\tWait for <expr> (default IsReady) to be true of the ad
\t-long\t\t\tThe ready ad (as -quick)
"""

PING_TIMEOUT = 2.0


def _run_dir() -> Path:
    return Path(param.get("RUN") or Path(param.get("LOCAL_DIR", ".")) / "run")


def master_pid() -> int | None:
    try:
        pid = int((_run_dir() / "master.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return pid


def _ping(name: str) -> dict | None:
    try:
        return ipc.call(ipc.sinful(str(_run_dir() / f"{name}.sock")), "ping", timeout=PING_TIMEOUT)
    except (HTCondorException, OSError):
        return None


def daemon_states() -> dict | None:
    """Per daemon (the master first): pid, state, up, exit; None when no master runs."""
    pid = master_pid()
    if pid is None:
        return None
    try:
        status = ipc.call(ipc.sinful(str(_run_dir() / "master.sock")), "status", timeout=PING_TIMEOUT)
    except (HTCondorException, OSError):
        return None
    master = _ping("master")
    out = {"master": {"pid": pid, "state": "Alive", "up": bool(master and master.get("up")), "exit": None,
                      "ppid": os.getppid() if pid == os.getpid() else _ppid(pid)}}
    for name, info in status.items():
        running = info.get("running")
        up = False
        if running and info.get("daemon_core", True):
            answer = _ping(name)
            up = bool(answer and answer.get("up") and answer.get("pid") == info.get("pid"))
        elif running:
            up = True               # not a DaemonCore daemon: running is all it can say
        out[name] = {"pid": info.get("pid") or 0, "state": info.get("state", "Dead"), "up": up,
                     "exit": info.get("exit"), "ppid": pid if running else 0, "ready": info.get("ready")}
    return out


def _ppid(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def ready_ad(states: dict) -> ClassAd:
    ad = ClassAd()
    for name, info in states.items():
        key = name.upper()
        ad[key] = info["state"]
        ad[f"{key}_PID"] = info["pid"]
        if isinstance(info.get("ready"), str):   # what the daemon told its master (set_ready_state)
            ad[f"{key}_State"] = info["ready"]
    wanted = [n.lower() for n in param.get("DAEMON_LIST", "MASTER").replace(",", " ").split()]
    ad["IsReady"] = all(states.get(n, {}).get("up", False) for n in wanted)
    startd = states.get("startd")
    if startd is not None:
        ad["STARTD_State"] = "Ready" if startd["up"] else "Starting" if startd["state"] == "Alive" else "Dead"
    return ad


def quick_lines(ad: ClassAd) -> list[str]:
    return [f"{name} = {ad.lookup(name)}" for name in ad.keys()]


def daemons_table(states: dict) -> list[str]:
    rows = [("Daemon", "Alive", "PID", "PPID", "Exit", "Addr", "Executable"),
            ("------", "-----", "---", "----", "----", "----", "----------")]
    for name, info in states.items():
        alive = info["state"] == "Alive"
        rows.append((name.capitalize() if name != "startd" else "Startd", "yes" if alive else "no",
                     str(info["pid"]) if alive else "no", str(info["ppid"] or "no"),
                     "no" if info["exit"] is None else str(info["exit"]),
                     ipc.sinful(str(_run_dir() / f"{name}.sock")) if alive else "no",
                     "condor_master" if name == "master" else f"jobledger.daemons.{name}"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1] for r in rows]


def _wait(expr: ExprTree, seconds: float | None) -> tuple[bool, dict | None]:
    deadline = None if seconds is None else time.monotonic() + seconds
    while True:
        states = daemon_states()
        if states is not None and expr.eval(ready_ad(states)) is True:
            return True, states
        if deadline is not None and time.monotonic() >= deadline:
            return False, states
        time.sleep(0.2 if deadline is None else max(0.0, min(0.2, deadline - time.monotonic())))


def run(argv: list[str]) -> int:
    args = Args(argv, "condor_who")
    mode, wait_for, wait_expr = "quick", None, None
    for arg in args:
        if args.flag("help", 1):
            raise Help()
        if args.flag("quick", 1) or args.flag("long", 1):
            mode = "quick"
        elif args.flag("daemons", 3):
            mode = "daemons"
        elif args.flag("wait", 1):
            qual = args.qualifier
            try:
                wait_for = float(qual) if qual else -1.0
            except ValueError:
                raise Usage(f"condor_who: -wait:{qual}: not a number of seconds") from None
            nxt = args.index + 1
            if nxt < len(args.argv) and not args.argv[nxt].startswith("-"):
                wait_expr = args.value()
        elif args.is_flag():
            raise args.unknown()
    pool.load_config()
    if wait_for is not None:
        try:
            expr = ExprTree(wait_expr or "IsReady")
        except ClassAdError as exc:
            raise Usage(f"condor_who: -wait: {wait_expr!r} is not an expression: {exc}") from None
        ok, states = _wait(expr, None if wait_for < 0 else wait_for)
    else:
        ok, states = True, daemon_states()
    if states is None:
        raise Failed("condor_who: the master is not running (no live pid in "
                     f"{_run_dir() / 'master.pid'})")
    lines = daemons_table(states) if mode == "daemons" else quick_lines(ready_ad(states))
    print("\n".join(lines))
    return 0 if ok else 1


main = entry("condor_who", run, USAGE, help_to="stdout")

__all__ = ["main", "run", "ready_ad", "daemon_states"]
