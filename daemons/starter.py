"""condor_starter's job: run a claim's jobs and make sure no outcome is lost.

A starter is one small process per claim, forked by the startd's launcher.  It

1. leaves the startd's session (``setsid``), creates the job's scratch
   directory (``$(EXECUTE)/dir_<pid>`` for its first job; mode 0700);
2. starts the job in its own process group: ``Cmd`` with ``Arguments``
   (or old ``Args``), ``Environment`` (or old ``Env``), in ``Iwd``, stdin /
   stdout / stderr from ``In``/``Out``/``Err`` (relative to ``Iwd``), as the
   job's ``Owner`` when the pool runs as root.  A job with file transfer
   (``eventcore.transfer.wants_sandbox``) runs in the scratch directory
   instead: its inputs are copied in first (``daemons.transfer``, as the
   owner; FILE_TRANSFER events via ``starter_transfer``) and its outputs
   copied back after it exits (timed in the outcome); a transfer that
   fails ends the run with a ``transfer_failed`` outcome (the job is held);
3. waits for the job -- or for an instruction (SIGTERM vacate, SIGQUIT
   fast kill, SIGHUP pool shutdown, SIGUSR1 suspend, SIGUSR2 continue) or for its startd to die
   (its lifeline pipe reads EOF), in which case it kills the job;
4. reports the outcome (exit code or signal, usage, times, or "evicted")
   to the schedd, retrying for ``SCHEDD_RECONNECT_TIMEOUT`` seconds; if the
   first try fails, the outcome goes first to ``outcome.json`` in the
   scratch directory (temp file, rename: complete or absent), which a
   schedd killed meanwhile reads when it comes back.  Once the schedd has
   acknowledged, the scratch directory is removed (left empty, it is
   renamed to be the next job's);
5. offers to run its claim's next job (claim reuse): the schedd's answer to
   an exit's outcome may carry the next job of the same kind, its new claim
   and scratch directory (the schedd moved the claim to it and tells the
   startd; none is offered while the startd drains), and the same
   starter runs it from step 1 on -- no process is forked per job but the
   job itself.  Without a next job, or after an eviction, it exits.

Nothing here may start a thread: the launcher forks starters from a
single-threaded process.
"""

from __future__ import annotations

import errno
import functools
import json
import os
import pwd
import select
import shlex
import shutil
import signal
import subprocess
import time

from jobledger.daemons import ipc, transfer
from jobledger.daemons.config_files import config_value, read_pool_config
from jobledger.daemons.credentials import CREDS_DIR, Store, directories, services_of
from jobledger.daemons.daemon import filesystem_domain, process_start_time
from jobledger.daemons.libc import PR_SET_PDEATHSIG, prctl
from jobledger.daemons.orphans import become_subreaper, sweep_leftovers
from jobledger.daemons.safe_open import safe_open
from jobledger.daemons.threadnames import name_process
from jobledger.eventcore import transfer as plan
from jobledger.eventcore.errors import HTCondorException, TransferError

OUTCOME = "outcome.json"
NO_REUSE = ".no_reuse"      # in EXECUTE while the startd drains (daemons.startd): no next job
STARTER_RECORD = "starter.json"
SIGNALS = {"vacate": signal.SIGTERM, "kill": signal.SIGQUIT, "shutdown": signal.SIGHUP,
           "suspend": signal.SIGUSR1, "continue": signal.SIGUSR2}
STOPPING = ("vacate", "kill", "shutdown")


def write_atomically(path: str, data: dict, durable: bool = False) -> None:
    """``data`` as JSON at ``path``: complete or absent, never torn.

    The rename makes it atomic against any process being killed.  Without
    ``durable`` nothing is fsynced: a power loss may lose the file, and then
    the schedd finds the starter gone without an outcome and runs the job
    again (jobs on a crashed machine are gone anyway).
    """
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(data, handle)
        if durable:
            handle.flush()
            os.fsync(handle.fileno())
    os.rename(tmp, path)
    if durable:
        fd = os.open(os.path.dirname(path) or ".", os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def read_outcome(scratch: str) -> dict | None:
    try:
        with open(os.path.join(scratch, OUTCOME), encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def job_arguments(job: dict, scratch: str | None = None) -> list[str]:
    """argv[1:] from ``Arguments`` (new syntax) or ``Args`` (old syntax); ``$$(CondorScratchDir)``
    in them is ``scratch`` when given, as HTCondor's starter expands it."""
    if isinstance(job.get("Arguments"), str):
        words = _new_syntax_args(job["Arguments"])
    elif isinstance(job.get("Args"), str):
        words = job["Args"].split()
    else:
        return []
    if scratch is not None:
        words = [word.replace(SCRATCH_MACRO, scratch) if SCRATCH_MACRO in word else word for word in words]
    return words


def _new_syntax_args(text: str) -> list[str]:
    # New syntax: whitespace separates, single quotes group, '' is a literal quote.
    out, word, in_quote, have, i = [], [], False, False, 0
    while i < len(text):
        ch = text[i]
        if ch == "'":
            if in_quote and text[i + 1:i + 2] == "'":
                word.append("'")
                i += 2
                continue
            in_quote, have = not in_quote, True
        elif ch.isspace() and not in_quote:
            if word or have:
                out.append("".join(word))
            word, have = [], False
        else:
            word.append(ch)
        i += 1
    if word or have:
        out.append("".join(word))
    return out


SCRATCH_MACRO = "$$(CondorScratchDir)"


def job_environment(job: dict, scratch: str, starter_environment: str = "") -> dict[str, str]:
    """The job's environment: the starter's own variables, then STARTER_JOB_ENVIRONMENT
    (``starter_environment``), then the job's Environment (or old-syntax Env); as
    HTCondor's starter, ``$$(CondorScratchDir)`` in a value is the job's scratch directory."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "_CONDOR_SCRATCH_DIR": scratch,
           "_CONDOR_JOB_IWD": str(job.get("Iwd", scratch)), "TMPDIR": scratch}
    if starter_environment.strip():
        text = starter_environment.strip()
        env.update(_environment_pairs(text[1:-1] if text[:1] == '"' and text[-1:] == '"' and len(text) > 1
                                      else text, text[:1] == '"'))
    if isinstance(job.get("Environment"), str):
        env.update(_environment_pairs(job["Environment"], True))
    elif isinstance(job.get("Env"), str):
        env.update(_environment_pairs(job["Env"], False))
    for key, value in env.items():
        if SCRATCH_MACRO in value:
            env[key] = value.replace(SCRATCH_MACRO, scratch)
    if job.get("GetEnv") is True:
        env = {**os.environ, **env}
    return env


def _environment_pairs(text: str, new_syntax: bool) -> dict[str, str]:
    """NAME=value pairs of an environment string: the new syntax (blank-separated, quoted
    words) or the old one (``;``-separated)."""
    pairs = {}
    try:
        parts = shlex.split(text) if new_syntax else text.split(";")
    except ValueError:                 # an unclosed quote: the words as they stand
        parts = text.split()
    for part in parts:
        key, _, value = part.partition("=")
        if key.strip():
            pairs[key.strip()] = value
    return pairs


@functools.lru_cache(maxsize=1)
def _starter_environment() -> str:
    """STARTER_JOB_ENVIRONMENT of the pool's configuration (read once per starter)."""
    try:
        config = read_pool_config(os.environ.get("CONDOR_CONFIG", ""))
        return config_value(config, "STARTER_JOB_ENVIRONMENT", "")
    except (OSError, HTCondorException):
        return ""


# Hold codes (schedd.md 2.1) for what can fail while starting a job.
HOLD_SPAWN, HOLD_OUTPUT, HOLD_INPUT, HOLD_IWD = 6, 7, 8, 14
HOLD_CREDENTIALS = 4      # CorruptedCredential: a credential the job needs is not there


class SpawnFailed(Exception):
    """The job could not be started; ``code`` is the hold code, ``error`` the OSError."""

    def __init__(self, code: int, error: OSError):
        super().__init__(str(error))
        self.code = code
        self.error = error


def _stage(code: int, opened: list, path, iwd: str, mode: str, owner: int | None = None):
    """The job's stdin/stdout/stderr file (DEVNULL when none); ``SpawnFailed(code)`` if it won't open."""
    if not isinstance(path, str) or path in ("", "/dev/null"):
        return subprocess.DEVNULL
    full = path if os.path.isabs(path) else os.path.join(iwd, path)
    try:
        handle = safe_open(full, mode, owner=owner)    # no symlink another user planted
    except OSError as exc:
        raise SpawnFailed(code, exc) from exc
    except ValueError as exc:                           # a NUL byte in the name
        raise SpawnFailed(code, OSError(errno.EINVAL, f"{exc}: {full!r}")) from exc
    opened.append(handle)
    return handle


class Starter:
    """A claim's starter (runs in the forked child; single-threaded)."""

    process_name = "starter"     # as top and ps show it
    continues = True             # offers to run its claim's next job (step 5)
    marks_start = False          # writes starter.json as it starts the job (see daemons.schedd.local)

    def __init__(self, job: dict, claim: str, execute_dir: str, schedd_address: str,
                 lifeline_fd: int | None, reconnect_timeout: float, kill_timeout: float = 5.0,
                 update_intervals: tuple[float, float] = (5.0, 300.0), machine_env: dict | None = None):
        self.schedd_address = schedd_address
        self.machine_env = dict(machine_env or {})  # the claim's devices (daemons.custom_resources)
        self.lifeline_fd = lifeline_fd
        self.startd_gone = False      # the lifeline read EOF
        self.reconnect_timeout = reconnect_timeout
        self.first_update, self.update_every = update_intervals
        self.kill_timeout = kill_timeout
        self.pending: list[str] = []
        self.no_reuse = os.path.join(execute_dir, NO_REUSE)
        self._take(job, claim, os.path.join(execute_dir, f"dir_{os.getpid()}"))

    def _take(self, job: dict, claim: str, scratch: str) -> None:
        """Make ``job`` (under ``claim``, in ``scratch``) this starter's run."""
        self.job = job
        self.claim = claim
        self.scratch = scratch
        self.sandboxed = plan.wants_sandbox(job, filesystem_domain())
        self.inputs: plan.InputPlan | None = None
        self.before: dict = {}
        self.child: subprocess.Popen | None = None
        self.reported_size: tuple | None = None
        self.suspended_at: float | None = None
        self.suspended_total = 0.0

    # -- lifecycle ----------------------------------------------------------------
    def run(self) -> int:
        name_process(self.process_name)
        os.setsid()
        become_subreaper()      # what the job leaves behind stays ours (daemons.orphans)
        for name, sig in SIGNALS.items():
            signal.signal(sig, lambda _s, _f, name=name: self.pending.append(name))
        while True:
            following = self._finish(self._run_one())
            if following is None:
                return 0
            # Instructions that came while the last outcome was reported: a stop may be
            # for the next job already (its claim is ours), suspend/continue were not.
            self.pending = [what for what in self.pending if what in STOPPING]
            self._take(following["job"], following["claim"], following["scratch"])

    def _run_one(self) -> dict:
        """Run the current job (with its transfers); its outcome."""
        os.makedirs(self.scratch, mode=0o700, exist_ok=True)
        start = time.time()
        stop = next((what for what in self.pending if what in STOPPING), None)
        if stop is not None:        # told to stop before the job started: it never runs
            return {"kind": "evicted", "reason": stop, "start": start, "end": start, "usage": {},
                    "suspended": 0.0}
        outcome = self._stage_input(start) if self.sandboxed else None
        if outcome is None:
            try:
                self.child = self._spawn()
            except SpawnFailed as failed:
                exc = failed.error
                outcome = {"kind": "spawn_failed", "hold_code": failed.code, "errno": exc.errno or 0,
                           "message": str(exc), "start": start, "end": time.time()}
            else:
                outcome = self._wait(start)
                shutil.rmtree(os.path.join(self.scratch, CREDS_DIR), ignore_errors=True)   # never sent back
                if self.sandboxed:
                    self._send_output(outcome)
        return outcome

    def _finish(self, outcome: dict) -> dict | None:
        """Report ``outcome``; the claim's next job if the schedd's answer carries one."""
        outcome.update(claim=self.claim, job=self.job_id)
        if "shutdown" in self.pending or outcome.get("reason") == "startd_gone":
            # The pool is stopping, or its lifeline broke (the pool died): one short try,
            # then leave; the schedd reads outcome.json when it is back.
            self.reconnect_timeout = 1.0
        more = self.continues and outcome.get("kind") == "exit" and \
            not any(what in STOPPING for what in self.pending) and self.startd_alive() \
            and not os.path.exists(self.no_reuse)
        answered, answer = self._report(outcome, more)
        if not answered:
            return None
        following = answer.get("next") if more and isinstance(answer, dict) else None
        if following is None or not self._pass_scratch(following["scratch"]):
            shutil.rmtree(self.scratch, ignore_errors=True)
        return following

    def startd_alive(self) -> bool:
        """False once the lifeline to the startd that forked us reads EOF (it died): a
        starter whose startd is gone offers no next job (a restarted startd would take
        it for a starter of its own, and this one kills what it runs on the EOF)."""
        fd = self.lifeline_fd
        if fd is None:
            return not self.startd_gone
        readable, _, _ = select.select([fd], [], [], 0)
        if readable and not os.read(fd, 1):
            self.lifeline_fd, self.startd_gone = None, True
        return not self.startd_gone

    def _pass_scratch(self, scratch: str) -> bool:
        """The finished job's scratch directory, if the job left it empty, becomes the
        next one's ``scratch`` (a rename: removing a directory and making one cost
        milliseconds on a journaling file system); False if it does not."""
        try:
            with os.scandir(self.scratch) as entries:
                if next(entries, None) is not None:
                    return False
            os.rename(self.scratch, scratch)
        except OSError:
            return False
        return True

    @property
    def job_id(self) -> str:
        return f"{self.job.get('ClusterId')}.{self.job.get('ProcId')}"

    def _spawn(self) -> subprocess.Popen:
        """Start the job; ``SpawnFailed`` says which step failed (HTCondor's hold code)."""
        job = self.job
        if self.sandboxed:
            iwd, cmd, streams = self.scratch, self.inputs.command, self._sandbox_streams()
        else:
            iwd = str(job.get("Iwd") or self.scratch)
            cmd, streams = str(job.get("Cmd", "")), (job.get("In"), job.get("Out"), job.get("Err"))
        if not os.path.isdir(iwd):
            raise SpawnFailed(HOLD_IWD, FileNotFoundError(2, "initial directory not accessible", iwd))
        if not os.path.isabs(cmd):
            cmd = os.path.join(iwd, cmd)
        opened = []
        try:
            owner = (self._owner_ids() or (None,))[0]    # whose files the job may use
            stdin = _stage(HOLD_INPUT, opened, streams[0], iwd, "rb", owner)
            stdout = _stage(HOLD_OUTPUT, opened, streams[1], iwd,
                            "ab" if job.get("StreamOut") else "wb", owner)
            stderr = stdout if streams[2] == streams[1] else \
                _stage(HOLD_OUTPUT, opened, streams[2], iwd, "wb", owner)
            if self.marks_start:    # this starter works: what kills it from now on is not the job's fault
                write_atomically(os.path.join(self.scratch, STARTER_RECORD), {"spawning": time.time()})
            env = job_environment(job, self.scratch, _starter_environment())
            env.update(self.machine_env)
            proxy = plan.proxy_name(job)
            if proxy is not None:   # HTCondor's X509_USER_PROXY: the sandbox's copy (refreshGSIProxy replaces it)
                env["X509_USER_PROXY"] = os.path.join(self.scratch, proxy) if self.sandboxed \
                    else str(job["x509userproxy"])
            creds = self._credentials(owner)
            if creds is not None:
                env["_CONDOR_CREDS"] = creds
            try:
                child = subprocess.Popen([cmd, *job_arguments(job, self.scratch)], cwd=iwd, stdin=stdin, stdout=stdout,
                                         stderr=stderr, env=env,
                                         process_group=0, close_fds=True, preexec_fn=self._preexec(),
                                         **self._popen_ids())
            except OSError as exc:
                raise SpawnFailed(HOLD_SPAWN, exc) from exc
            except (ValueError, TypeError) as exc:     # e.g. a NUL byte in an argument
                raise SpawnFailed(HOLD_SPAWN, OSError(errno.EINVAL, f"cannot start the job: {exc}")) from exc
        finally:
            for handle in opened:
                handle.close()
        return child

    def _credentials(self, owner) -> str | None:
        """The credentials the job asks for (``OAuthServicesNeeded``, ``SendCredential``)
        copied from the credential directory into its sandbox: the directory's path, or
        None when it asks for none.  ``SpawnFailed`` (held) when one is not stored."""
        services = services_of(self.job.get("OAuthServicesNeeded"))
        kerberos = self.job.get("SendCredential") is True
        if not services and not kerberos:
            return None
        user = self.job.get("User") or self.job.get("Owner") or ""
        ids = self._owner_ids()
        try:
            config = read_pool_config(os.environ.get("CONDOR_CONFIG", ""))
            store = Store(*directories(lambda name, default=None: config_value(config, name, default)))
            return store.install(str(user), services, kerberos, self.scratch, ids)
        except (OSError, HTCondorException) as exc:
            raise SpawnFailed(HOLD_CREDENTIALS, OSError(errno.ENOENT, f"job credentials: {exc}")) from exc

    def _preexec(self):
        """A scheduler-universe job (DAGMan) dies the moment its starter does (a second
        DAGMan must never run beside one left over).  Other jobs are spawned without
        Python code in the child (tens of milliseconds each): the launcher, or the
        master, kills what a dead starter leaves (daemons.orphans)."""
        return die_with_parent(os.getpid()) if self.marks_start else None

    def _sandbox_streams(self) -> tuple:
        """stdin/stdout/stderr of a sandboxed job: files in the sandbox (or /dev/null)."""
        job = self.job
        out = plan.STDOUT if _named(job.get("Out")) else None
        err = plan.STDERR if _named(job.get("Err")) else None
        if err and job.get("Err") == job.get("Out"):
            err = out
        return self.inputs.stdin, out, err

    # -- transfer -------------------------------------------------------------------
    def _stage_input(self, start: float) -> dict | None:
        """Copy the inputs into the sandbox (as the job's owner; the files an
        ON_EXIT_OR_EVICT run left in the spool as the starter); the outcome of a
        failed transfer, or None."""
        began = time.time()
        ids = self._owner_ids()
        try:
            transfer.give_to(self.scratch, ids)
            self.inputs = plan.input_plan(self.job)
            with transfer.acting_as(ids):
                size = transfer.stage_input(self.inputs, self.scratch, self.job.get("RequestDisk"),
                                            self.job.get("MaxTransferInputMB"), self._told_to_stop)
            spooled = self.job.get("_EvictedFiles")
            if isinstance(spooled, str) and os.path.isdir(spooled):
                transfer.stage_input(plan.InputPlan((plan.Source(spooled, "", True),), "", None), self.scratch,
                                     should_stop=self._told_to_stop)
                transfer.give_to(self.scratch, ids)
        except TransferError as failed:
            return _transfer_failed(failed, start)
        except transfer.Stopped:
            return self._stopped(start)
        self.before = transfer.snapshot(self.scratch)
        self._tell("starter_transfer", events=[[plan.IN_STARTED, began], [plan.IN_FINISHED, time.time()]],
                   input_bytes=size)
        return None

    def _send_output(self, outcome: dict) -> None:
        """Bring the outputs back (after an exit; after an eviction only for
        ON_EXIT_OR_EVICT, and then into the job's spool for its next run)."""
        evicted = outcome.get("kind") != "exit"
        if evicted and not (plan.output_on_evict(self.job) and self.job.get("_EvictedFiles")):
            return
        began = time.time()
        outcome["disk_usage_kb"] = transfer.disk_usage_kb(self.scratch)
        outcome["transfers"] = [[plan.OUT_STARTED, began]]
        try:
            changed = [name for name in plan.changed_files(self.before, transfer.snapshot(self.scratch))
                       if name != plan.proxy_name(self.job)]   # a refreshed proxy never goes back
            if evicted:
                items = plan.evicted_plan(self.job, changed, str(self.job["_EvictedFiles"]))
                items = [item for item in items if os.path.lexists(os.path.join(self.scratch, item.name))]
                for item in items:
                    os.makedirs(os.path.dirname(item.dest), exist_ok=True)
                transfer.send_output(self.job, items, self.scratch, self.job_id,  # into the spool
                                     should_stop=self._told_to_abort)
            else:
                with transfer.acting_as(self._owner_ids()):
                    transfer.send_output(self.job, plan.output_plan(self.job, changed), self.scratch,
                                         self.job_id, self.job.get("MaxTransferOutputMB"), self._told_to_abort)
        except TransferError as failed:
            outcome.update(_transfer_failed(failed, outcome.get("start", began)), end=outcome.get("end"))
            return
        except transfer.Stopped:
            outcome.update(self._stopped(outcome.get("start", began)), end=outcome.get("end"))
            return
        outcome["transfers"].append([plan.OUT_FINISHED, time.time()])

    def _told_to_stop(self) -> bool:
        """Asked between the chunks of an input transfer: a stop came (vacate, kill, the
        pool's shutdown) or the startd is gone; the transfer then ends where it is."""
        return any(what in STOPPING for what in self.pending) or not self.startd_alive()

    def _told_to_abort(self) -> bool:
        """The same for outputs, which a vacate is no reason to drop (ON_EXIT_OR_EVICT
        sends them because of it): only a kill (removal, hold), the pool's shutdown or
        the startd's end stop them."""
        return any(what in ("kill", "shutdown") for what in self.pending) or not self.startd_alive()

    def _stopped(self, start: float) -> dict:
        """The outcome of a run stopped during a transfer: evicted, the job not (or no more) run."""
        reason = next((what for what in self.pending if what in STOPPING), "startd_gone")
        return {"kind": "evicted", "reason": reason, "start": start, "end": time.time(), "usage": {},
                "suspended": 0.0}

    def _tell(self, cmd: str, **args) -> None:
        """Best effort: a report the schedd may miss (it is informational)."""
        try:
            ipc.call(self.schedd_address, cmd, timeout=10, claim=self.claim, job=self.job_id, **args)
        except HTCondorException:
            pass

    def _popen_ids(self) -> dict:
        """Popen's user/group arguments: the job runs as its owner (a root starter)."""
        ids = self._owner_ids()
        return {} if ids is None else {"user": ids[0], "group": ids[1], "extra_groups": []}

    def _owner_ids(self) -> tuple[int, int] | None:
        """(uid, gid) of the job's owner when we are root and the owner is not; else None."""
        owner = self.job.get("Owner")
        if os.geteuid() != 0 or not isinstance(owner, str):
            return None
        try:
            entry = pwd.getpwnam(owner)
        except KeyError:
            return None
        return None if entry.pw_uid == 0 else (entry.pw_uid, entry.pw_gid)

    def _wait(self, start: float) -> dict:
        pid = self.child.pid
        pidfd = os.pidfd_open(pid)
        watched = [pidfd] + ([self.lifeline_fd] if self.lifeline_fd is not None else [])
        killed_by = None
        deadline = None
        next_update = time.monotonic() + self.first_update
        try:
            while True:
                if time.monotonic() >= next_update and killed_by is None:
                    self._report_size(pid)
                    next_update = time.monotonic() + self.update_every
                self._handle_instructions()
                if self.pending and self.pending[-1] in STOPPING and killed_by is None:
                    killed_by = self.pending[-1]
                ready = self._select(watched, 0.5)
                if pidfd in ready:
                    break
                lifeline = self.lifeline_fd
                if lifeline in ready and not self.startd_alive():
                    watched.remove(lifeline)
                    killed_by = "startd_gone"
                    self._signal_job(signal.SIGKILL)
                if killed_by and deadline is None:
                    deadline = time.monotonic() + (0 if killed_by != "vacate" else self.kill_timeout)
                if deadline is not None and time.monotonic() >= deadline:
                    self._signal_job(signal.SIGKILL)
            _, status, usage = os.wait4(pid, 0)
            # Reaped here: Popen must not poll the pid again (it may be another process by then).
            self.child.returncode = os.waitstatus_to_exitcode(status)
        finally:
            os.close(pidfd)
        self._signal_job(signal.SIGKILL)  # whatever the job left behind in its group
        sweep_leftovers()                 # and elsewhere (ours now: we are their subreaper)
        end = time.time()
        outcome = {"start": start, "end": end, "usage": _usage(usage),
                   "suspended": self.suspended_total}
        if killed_by:
            outcome["kind"] = "evicted"
            outcome["reason"] = killed_by
        else:
            outcome.update(exit_status(status))
        return outcome

    def _report_size(self, pid: int) -> None:
        """Tell the schedd the job's memory when it changed (IMAGE_SIZE events); best effort."""
        size = job_memory(pid)
        if size is None or size == self.reported_size:
            return
        try:
            ipc.call(self.schedd_address, "starter_update", timeout=2, claim=self.claim, job=self.job_id,
                     image_size_kb=size[0], rss_kb=size[1])
            self.reported_size = size
        except HTCondorException:
            pass  # the next update, or the outcome, will do

    def _select(self, fds, timeout):
        try:
            ready, _, _ = select.select(fds, [], [], timeout)
        except InterruptedError:
            return []
        return ready

    def _handle_instructions(self) -> None:
        while self.pending:
            what = self.pending[0]
            if what in STOPPING:
                self._signal_job(signal.SIGCONT)
                self._signal_job(signal.SIGTERM if what == "vacate" else signal.SIGKILL)
                return
            self.pending.pop(0)
            if what == "suspend" and self.suspended_at is None:
                self._signal_job(signal.SIGSTOP)
                self.suspended_at = time.monotonic()
            elif what == "continue" and self.suspended_at is not None:
                self._signal_job(signal.SIGCONT)
                self.suspended_total += time.monotonic() - self.suspended_at
                self.suspended_at = None

    def _signal_job(self, sig: int) -> None:
        if self.child is None:
            return
        try:
            os.killpg(self.child.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def _offer(self) -> dict:
        """What an outcome report that offers to run the claim's next job carries:
        ``direct``, the schedd may move the claim to the next job itself and tell the
        startd after (this starter runs in the startd's EXECUTE and checks its drain
        marker before each offer)."""
        return {"more": True, "direct": True}

    def _report(self, outcome: dict, more: bool = False) -> tuple[bool, object]:
        """Tell the schedd (``more``: offering to run the claim's next job); (True, its
        answer) once it acknowledged (the outcome is in its journal), else (False, None).
        A first try that fails saves the outcome to outcome.json before the retries."""
        deadline = time.monotonic() + self.reconnect_timeout
        delay = 0.05
        offer = self._offer() if more else {}
        saved = False
        while True:
            try:
                return True, ipc.call(self.schedd_address, "starter_outcome", timeout=30, claim=self.claim,
                                      job=self.job_id, outcome=outcome, **offer)
            except HTCondorException:
                if not saved:
                    write_atomically(os.path.join(self.scratch, OUTCOME), outcome)
                    saved = outcome["saved"] = True     # (the schedd removes it with the scratch)
                if time.monotonic() >= deadline:
                    return False, None  # the schedd reads outcome.json when it comes back
                time.sleep(delay)
                delay = min(delay * 2, 1.0)


def die_with_parent(parent: int):
    """Popen's ``preexec_fn`` for a job: the kernel sends it SIGKILL when its starter
    (``parent``) dies, even by SIGKILL (``PR_SET_PDEATHSIG``; set after the change to the
    job's owner, which would clear it).  A starter already gone: the job never runs."""
    def arm() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:
            os._exit(127)
    return arm


def exit_status(status: int) -> dict:
    """The outcome of a job that exited with wait status ``status``."""
    if os.WIFSIGNALED(status):
        return {"kind": "exit", "by_signal": True, "signal": os.WTERMSIG(status),
                "core": os.WCOREDUMP(status)}
    return {"kind": "exit", "by_signal": False, "code": os.WEXITSTATUS(status)}


def _named(path) -> bool:
    return isinstance(path, str) and path not in ("", "/dev/null")


def _transfer_failed(failed: TransferError, start: float) -> dict:
    return {"kind": "transfer_failed", "hold_code": failed.code, "errno": failed.subcode,
            "message": failed.message, "start": start, "end": time.time()}


def job_memory(pid: int) -> tuple[int, int] | None:
    """(virtual size KB, resident set KB) of a process, from /proc."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            fields = dict(line.split(":", 1) for line in handle if ":" in line)
        return int(fields["VmSize"].split()[0]), int(fields["VmRSS"].split()[0])
    except (OSError, KeyError, ValueError):
        return None


def _usage(usage) -> dict:
    return {"user": usage.ru_utime, "sys": usage.ru_stime, "maxrss_kb": usage.ru_maxrss}


def starter_identity(pid: int) -> dict:
    """What the startd and schedd record to find a starter again: pid + start time."""
    return {"pid": pid, "start": process_start_time(pid)}
