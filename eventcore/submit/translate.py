"""Submit commands -> job attributes (submit.md section 4), as ClassAd text.

The translation is a list of *rules*.  Each rule names the submit commands
it reads (``inputs``) and returns ``{attribute: expression text}``.  Knowing
the inputs lets ``jobs.py`` run a rule once per cluster when none of its
inputs changes from job to job, and once per job otherwise.

A rule reads commands through a ``Job`` view: ``job.get("output")`` is the
expanded value of the first of the command's spellings that is set and not
empty (None otherwise).  Every value a rule returns is ClassAd expression
text (strings quoted, numbers bare).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

from jobledger.eventcore.classad.unparse import quote_string as quote
from jobledger.eventcore.errors import ClassAdError, SubmitError

from .args import environment_v2, join_v2, parse_arguments
from .requirements import default_requirements

UNIVERSES = {"standard": 1, "vanilla": 5, "scheduler": 7, "grid": 9, "java": 10, "parallel": 11,
             "local": 12, "vm": 13, "docker": 5, "container": 5}
NOTIFICATIONS = {"never": 0, "always": 1, "complete": 2, "error": 3, "start": 4}
RECONNECTING = {5, 10, 11, 13}   # universes that get JobLeaseDuration
KILLSIG_UNIVERSES = {7, 9, 10, 11, 12}
DEFAULT_REQUEST_MEMORY = "128"
DEFAULT_REQUEST_DISK = "MAX({ 1024,(TransferInputSizeMB + 1) * 1.25 }) * 1024"
DEFAULT_JOB_MAX_RETRIES = 2

# Commands and their other spellings (the job attribute name is one too).
ALIASES: dict[str, tuple[str, ...]] = {
    "universe": ("universe", "JobUniverse"),
    "executable": ("executable", "Cmd"),
    "shell": ("shell",),
    "arguments": ("arguments", "args"),
    "arguments2": ("arguments2",),
    "allow_arguments_v1": ("allow_arguments_v1",),
    "environment": ("environment", "env"),
    "getenv": ("getenv", "get_env"),
    "input": ("input", "stdin", "In"),
    "output": ("output", "stdout", "Out"),
    "error": ("error", "stderr", "Err"),
    "stream_input": ("stream_input", "StreamIn"),
    "stream_output": ("stream_output", "StreamOut"),
    "stream_error": ("stream_error", "StreamErr"),
    "transfer_input": ("transfer_input", "TransferIn"),
    "transfer_output": ("transfer_output", "TransferOut"),
    "transfer_error": ("transfer_error", "TransferErr"),
    "log": ("log", "UserLog"),
    "log_xml": ("log_xml", "UserLogUseXML"),
    "initialdir": ("initialdir", "initial_dir", "job_iwd", "Iwd"),
    "requirements": ("requirements",),
    "rank": ("rank", "preferences"),
    "priority": ("priority", "prio", "JobPrio"),
    "request_cpus": ("request_cpus", "RequestCpus"),
    "request_memory": ("request_memory", "RequestMemory"),
    "request_disk": ("request_disk", "RequestDisk"),
    "hold": ("hold",),
    "should_transfer_files": ("should_transfer_files", "ShouldTransferFiles"),
    "when_to_transfer_output": ("when_to_transfer_output", "WhenToTransferOutput"),
    "transfer_input_files": ("transfer_input_files", "TransferInputFiles", "TransferInput"),
    "transfer_output_files": ("transfer_output_files", "TransferOutputFiles", "TransferOutput"),
    "transfer_output_remaps": ("transfer_output_remaps", "TransferOutputRemaps"),
    "transfer_executable": ("transfer_executable", "TransferExecutable"),
    "on_exit_remove": ("on_exit_remove", "OnExitRemove"),
    "on_exit_hold": ("on_exit_hold", "OnExitHold"),
    "max_retries": ("max_retries", "JobMaxRetries"),
    "success_exit_code": ("success_exit_code", "JobSuccessExitCode"),
    "retry_until": ("retry_until",),
    "notification": ("notification", "JobNotification"),
    "accounting_group": ("accounting_group", "AcctGroup"),
    "x509userproxy": ("x509userproxy",),
    "accounting_group_user": ("accounting_group_user", "AcctGroupUser"),
    "project_name": ("project_name", "ProjectName"),
    "nice_user": ("nice_user", "NiceUser"),
    "use_oauth_services": ("use_oauth_services",),
    "send_credential": ("send_credential", "SendCredential"),
    "image_size": ("image_size", "ImageSize"),
    "disk_usage": ("disk_usage", "DiskUsage"),
    "machine_count": ("machine_count", "node_count"),
    "docker_image": ("docker_image", "DockerImage"),
    "container_image": ("container_image", "ContainerImage"),
    "deferral_time": ("deferral_time", "DeferralTime"),
    "deferral_window": ("deferral_window", "DeferralWindow"),
    "deferral_prep_time": ("deferral_prep_time", "DeferralPrepTime"),
    "checkpoint_exit_code": ("checkpoint_exit_code", "SuccessCheckpointExitCode"),
    "kill_sig": ("kill_sig", "KillSig"),
    "request_gpus": ("request_gpus", "RequestGPUs"),
    "require_gpus": ("require_gpus", "RequireGPUs"),
    "gpus_minimum_capability": ("gpus_minimum_capability", "GPUsMinCapability"),
    "gpus_maximum_capability": ("gpus_maximum_capability", "GPUsMaxCapability"),
    "gpus_minimum_memory": ("gpus_minimum_memory", "GPUsMinMemory"),
}

# Simple one-command -> one-attribute conversions: command, attribute, kind.
SIMPLE = [
    ("periodic_hold", "PeriodicHold", "expr"), ("periodic_hold_reason", "PeriodicHoldReason", "expr"),
    ("periodic_hold_subcode", "PeriodicHoldSubCode", "expr"),
    ("periodic_release", "PeriodicRelease", "expr"), ("periodic_remove", "PeriodicRemove", "expr"),
    ("periodic_vacate", "PeriodicVacate", "expr"),
    ("on_exit_hold_reason", "OnExitHoldReason", "expr"), ("on_exit_hold_subcode", "OnExitHoldSubCode", "expr"),
    ("leave_in_queue", "LeaveJobInQueue", "expr"), ("notify_user", "NotifyUser", "string"),
    ("email_attributes", "EmailAttributes", "string"), ("batch_name", "JobBatchName", "string"),
    ("description", "JobDescription", "string"), ("concurrency_limits", "ConcurrencyLimits", "string"),
    ("max_materialize", "JobMaterializeLimit", "int"), ("max_idle", "JobMaterializeMaxIdle", "expr"),
    ("materialize_max_idle", "JobMaterializeMaxIdle", "expr"),
    ("job_max_vacate_time", "JobMaxVacateTime", "expr"),
    ("max_job_retirement_time", "MaxJobRetirementTime", "expr"),
    ("remove_kill_sig", "RemoveKillSig", "string"), ("hold_kill_sig", "HoldKillSig", "string"),
    ("kill_sig_timeout", "KillSigTimeout", "int"), ("job_lease_duration", "JobLeaseDuration", "expr"),
    ("next_job_start_delay", "NextJobStartDelay", "expr"),
    ("allowed_job_duration", "AllowedJobDuration", "expr"),
    ("allowed_execute_duration", "AllowedExecuteDuration", "expr"),
    ("core_size", "CoreSize", "int"), ("coresize", "CoreSize", "int"),
    ("keep_claim_idle", "KeepClaimIdle", "expr"), ("job_machine_attrs", "JobMachineAttrs", "string"),
    ("match_list_length", "LastMatchListLength", "int"),
    ("submit_event_notes", "SubmitEventNotes", "string"), ("dag_node_name", "DAGNodeName", "string"),
    ("submit_event_user_notes", "SubmitEventUserNotes", "string"),
    ("submit_event_notes_attrs", "SubmitEventNotesAttrs", "string"),
    ("want_graceful_removal", "WantGracefulRemoval", "expr"), ("grid_resource", "GridResource", "string"),
    ("jobset", "JobSetName", "string"), ("transfer_checkpoint_files", "TransferCheckpoint", "string"),
    ("output_destination", "OutputDestination", "string"),
    ("max_transfer_input_mb", "MaxTransferInputMB", "expr"),
    ("max_transfer_output_mb", "MaxTransferOutputMB", "expr"),
]

_UNIT_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([KMGTP]?)B?\s*$", re.IGNORECASE)
_UNITS = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5}
_TRUE = {"true", "yes", "t", "y", "1"}
_FALSE = {"false", "no", "f", "n", "0"}


class Job:
    """The expanded commands of one job, as rules see them: ``values`` (this
    job's own) in front of ``base`` (the cluster's), lower-case names.
    ``present`` (command -> its spellings that are set) speeds up ``get``."""

    __slots__ = ("values", "base", "env", "owner", "spool", "present")

    def __init__(self, values: dict[str, str | None], base: dict[str, str | None], env, owner: str,
                 spool: bool, present: dict[str, tuple[str, ...]] | None = None):
        self.values = values
        self.base = base
        self.env = env
        self.owner = owner
        self.spool = spool
        self.present = present

    def raw(self, name: str) -> str | None:
        """Expanded value of one spelling (None when unset or empty)."""
        value = self.values.get(name)
        if value is None:
            value = self.base.get(name)
        return value or None

    def get(self, command: str) -> str | None:
        if self.present is not None:
            names = self.present.get(command)
            if not names:
                return None
        else:
            names = _SPELLINGS.get(command, (command,))
        for name in names:
            value = self.values.get(name)
            if value is None:
                value = self.base.get(name)
            if value:
                return value
        return None

    def names(self):
        return self.values.keys() | self.base.keys()


def present_spellings(keys) -> dict[str, tuple[str, ...]]:
    """For each command, the spellings of it that a submit sets."""
    return {command: tuple(n for n in names if n in keys) for command, names in _SPELLINGS.items()
            if any(n in keys for n in names)}


_SPELLINGS = {command: tuple(n.lower() for n in names) for command, names in ALIASES.items()}


def spellings(command: str) -> tuple[str, ...]:
    return _SPELLINGS.get(command, (command,))


# -- value converters -------------------------------------------------------------
_PLAIN_LITERAL = re.compile(r'"[^"\\]*"\Z|-?[0-9]+(?:\.[0-9]+)?\Z|true\Z|false\Z|undefined\Z', re.IGNORECASE)


def expr(text: str, command: str) -> str:
    """``text`` if it parses as a ClassAd expression, else SubmitError."""
    if _PLAIN_LITERAL.match(text):
        return text
    problem = parse_problem(text)
    if problem is not None:
        raise SubmitError(f"{command} = {text}: not a valid ClassAd expression ({problem})")
    return text


@functools.lru_cache(maxsize=4096)
def parse_problem(text: str) -> str | None:
    """Why ``text`` is not a ClassAd expression (None if it is); cached,
    because per-job values repeat (Requirements, policies)."""
    from jobledger.eventcore.classad import parse_expr
    try:
        parse_expr(text)
    except (ClassAdError, RecursionError) as exc:
        return _first_line(exc)
    return None


def _first_line(exc) -> str:
    return str(exc).split("\n", 1)[0]


def boolean(text: str, command: str) -> bool:
    low = text.strip().lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise SubmitError(f"{command} = {text}: must be true or false")


def integer(text: str, command: str) -> int:
    try:
        return int(text.strip(), 10)
    except ValueError:
        raise SubmitError(f"{command} = {text}: must be an integer") from None


def unquoted(text: str) -> str:
    text = text.strip()
    if len(text) > 1 and text[0] == text[-1] == '"':
        return text[1:-1]
    return text


def size(text: str, unit_power: int, command: str) -> str:
    """``2GB`` -> MiB (unit_power 2) or KiB (1); other text is an expression."""
    m = _UNIT_RE.match(text)
    if m is None:
        return expr(text, command)
    number = float(m.group(1))
    power = _UNITS[m.group(2).upper()] if m.group(2) else unit_power
    value = number * 1024 ** power / 1024 ** unit_power
    return str(int(value) if value == int(value) else int(value) + 1)


def comma_list(text: str) -> str:
    return ",".join(p.strip() for p in text.split(",") if p.strip())


def bool_text(value: bool) -> str:
    return "true" if value else "false"


def absolute(path: str, base: str) -> str:
    if path.startswith("/"):
        return path
    joined = base.rstrip("/") + "/" + (path[2:] if path.startswith("./") else path)
    return joined


# -- rules --------------------------------------------------------------------------
RULES: list[tuple[tuple[str, ...], Callable[[Job], dict[str, str]]]] = []


def rule(*commands: str):
    inputs = tuple(name for command in commands for name in spellings(command))

    def register(fn):
        RULES.append((inputs, fn))
        return fn
    return register


def universe_of(job: Job) -> tuple[int, str]:
    text = job.get("universe")
    if text is None:
        return 5, "vanilla"
    low = text.strip().lower()
    if low in UNIVERSES:
        return UNIVERSES[low], low
    if low.isdigit() and int(low) in UNIVERSES.values():
        return int(low), low
    raise SubmitError(f"I don't know about the '{text}' universe.")


def iwd_of(job: Job) -> str:
    text = job.get("initialdir")
    if text is None:
        return job.env.cwd
    path = absolute(text, job.env.cwd)
    if not job.env.is_dir(path):
        raise SubmitError(f"No such directory: {path}")
    return path


@rule("universe", "docker_image", "container_image")
def _universe(job: Job) -> dict[str, str]:
    number, name = universe_of(job)
    out = {"JobUniverse": str(number)}
    if name == "docker" or job.get("docker_image"):
        out["WantDocker"] = "true"
    if name == "container" or job.get("container_image"):
        out["WantContainer"] = "true"
    if job.get("docker_image"):
        out["DockerImage"] = quote(unquoted(job.get("docker_image")))
    if job.get("container_image"):
        out["ContainerImage"] = quote(unquoted(job.get("container_image")))
    if number in KILLSIG_UNIVERSES:
        out["KillSig"] = quote("SIGTERM")
    if number in RECONNECTING:
        out["JobLeaseDuration"] = "2400"
    return out


def shell_of(job: Job) -> str | None:
    """The ``shell`` command's text (the job runs ``/bin/sh -c TEXT``), None without one."""
    text = job.get("shell")
    return text if text is not None and text.strip() else None


@rule("executable", "initialdir", "transfer_executable", "universe", "docker_image", "container_image", "shell")
def _executable(job: Job) -> dict[str, str]:
    if shell_of(job) is not None:       # as condor_submit: /bin/sh from the execution point
        return {"Cmd": quote("/bin/sh"), "TransferExecutable": "false"}
    cmd = job.get("executable")
    number, name = universe_of(job)
    out = {}
    if cmd is None:
        if name in ("docker", "container") or job.get("docker_image") or job.get("container_image"):
            return out
        raise SubmitError("No 'executable' parameter was provided")
    transfer = job.get("transfer_executable")
    transferred = transfer is None or boolean(transfer, "transfer_executable")
    if not transferred:
        out["TransferExecutable"] = "false"
    path = absolute(cmd, iwd_of(job)) if transferred and number not in (9,) else cmd
    out["Cmd"] = quote(path)
    out["ExecutableSize"] = str(_kib(job.env.file_size(path) or 0))
    return out


def _kib(size_bytes: int) -> int:
    """condor_submit's sizes: whole KiB, rounded up (calc_image_size_kb)."""
    return (size_bytes + 1023) // 1024


@rule("executable", "initialdir", "transfer_executable", "universe", "transfer_input_files", "input",
      "transfer_input", "disk_usage")
def _input_size(job: Job) -> dict[str, str]:
    """TransferInputSizeMB and DiskUsage as condor_submit computes them (SetTransferFiles):
    the executable's KiB plus each input file's (a directory: its files'; a URL: 0) plus
    stdin's unless ``transfer_input = false``; DiskUsage in KiB, TransferInputSizeMB in
    whole MiB rounded up.  ``disk_usage`` given: DiskUsage is that, and TransferInputSizeMB
    is not computed.  The schedd holds a job over MAX_TRANSFER_INPUT_MB at submit."""
    given = job.get("disk_usage")
    if given is not None:
        value = size(given, 1, "disk_usage")
        if not value.isdigit() or int(value) < 1:
            raise SubmitError(f"'{given}' is not valid for disk_usage. It must be >= 1")
        return {"DiskUsage": value}
    cmd = job.get("executable")
    iwd = iwd_of(job)
    kib = 0
    if cmd:
        transfer = job.get("transfer_executable")
        transferred = transfer is None or boolean(transfer, "transfer_executable")
        path = absolute(cmd, iwd) if transferred and universe_of(job)[0] != 9 else cmd
        kib = _kib(job.env.file_size(path) or 0)
    inputs = [p.strip() for p in (job.get("transfer_input_files") or "").split(",") if p.strip()]
    stdin = job.get("input")
    sent = job.get("transfer_input")
    if stdin and stdin.strip() and (sent is None or boolean(sent, "transfer_input")):
        inputs.append(stdin.strip())
    kib += sum(_kib(job.env.input_size(absolute(p, iwd))) for p in inputs if "://" not in p)
    return {"TransferInputSizeMB": str((kib + 1023) // 1024), "DiskUsage": str(kib)}


@rule("image_size", "executable", "initialdir", "transfer_executable")
def _image_size(job: Job) -> dict[str, str]:
    given = job.get("image_size")
    if given is not None:
        return {"ImageSize": size(given, 1, "image_size")}
    cmd = job.get("executable")
    kib = job.env.file_size(absolute(cmd, iwd_of(job))) if cmd else None
    return {"ImageSize": str(_kib(kib or 0))}


@rule("initialdir")
def _iwd(job: Job) -> dict[str, str]:
    return {"Iwd": quote(iwd_of(job))}


@rule("arguments", "arguments2", "allow_arguments_v1", "shell")
def _arguments(job: Job) -> dict[str, str]:
    shell = shell_of(job)
    if shell is not None:               # the shell's command line wins over any arguments
        return {"Arguments": quote(join_v2(["-c", shell]))}
    v1, v2 = job.get("arguments"), job.get("arguments2")
    if v1 is not None and v2 is not None:
        allow = job.get("allow_arguments_v1")
        if not (allow and boolean(allow, "allow_arguments_v1")):
            raise SubmitError("If you wish to specify both 'arguments' and 'arguments2' for "
                              "maximal compatibility, you must set allow_arguments_v1 = true")
    if v2 is not None:
        return {"Arguments": quote(parse_arguments('"' + v2.strip() + '"' if not v2.strip().startswith('"')
                                                   else v2, "arguments2"))}
    if v1 is None:
        return {"Arguments": '""'}
    if v1.lstrip().startswith('"'):
        return {"Arguments": quote(parse_arguments(v1, "arguments"))}
    return {"Args": quote(v1)}


@rule("environment", "getenv")
def _environment(job: Job) -> dict[str, str]:
    return {"Environment": quote(environment_v2(job.get("environment"), job.get("getenv"), job.env))}


def _stream(job: Job, command: str, attr: str, stream_cmd: str, stream_attr: str,
            transfer_cmd: str, transfer_attr: str) -> dict[str, str]:
    path = job.get(command)
    out = {}
    if path is None:
        out[attr] = quote("/dev/null")
        out[transfer_attr] = "false"
        return out
    out[attr] = quote(path)
    stream = job.get(stream_cmd)
    out[stream_attr] = bool_text(boolean(stream, stream_cmd) if stream else False)
    transfer = job.get(transfer_cmd)
    if transfer is not None:
        out[transfer_attr] = bool_text(boolean(transfer, transfer_cmd))
    return out


@rule("input", "stream_input", "transfer_input")
def _input(job: Job) -> dict[str, str]:
    return _stream(job, "input", "In", "stream_input", "StreamIn", "transfer_input", "TransferIn")


@rule("output", "stream_output", "transfer_output")
def _output(job: Job) -> dict[str, str]:
    return _stream(job, "output", "Out", "stream_output", "StreamOut", "transfer_output", "TransferOut")


@rule("error", "stream_error", "transfer_error")
def _error(job: Job) -> dict[str, str]:
    return _stream(job, "error", "Err", "stream_error", "StreamErr", "transfer_error", "TransferErr")


@rule("log", "log_xml", "initialdir")
def _log(job: Job) -> dict[str, str]:
    out = {}
    log = job.get("log")
    if log is not None:
        out["UserLog"] = quote(absolute(log, iwd_of(job)))
    xml = job.get("log_xml")
    if xml is not None:
        out["UserLogUseXML"] = bool_text(boolean(xml, "log_xml"))
    return out


@rule("rank")
def _rank(job: Job) -> dict[str, str]:
    text = job.get("rank")
    return {"Rank": expr(text, "rank") if text is not None else "0.0"}


@rule("priority")
def _priority(job: Job) -> dict[str, str]:
    text = job.get("priority")
    return {"JobPrio": str(integer(text, "priority")) if text is not None else "0"}


def request_cpus(job: Job) -> str | None:
    text = job.get("request_cpus")
    if text is None:
        return "1"
    return None if text.strip().lower() == "undefined" else expr(text, "request_cpus")


def request_memory(job: Job) -> str | None:
    text = job.get("request_memory")
    if text is None:
        return DEFAULT_REQUEST_MEMORY
    return None if text.strip().lower() == "undefined" else size(text, 2, "request_memory")


def request_disk(job: Job) -> str | None:
    text = job.get("request_disk")
    if text is None:
        return DEFAULT_REQUEST_DISK
    return None if text.strip().lower() == "undefined" else size(text, 1, "request_disk")


@rule("request_cpus", "request_memory", "request_disk")
def _requests(job: Job) -> dict[str, str]:
    out = {}
    for attr, value in (("RequestCpus", request_cpus(job)), ("RequestMemory", request_memory(job)),
                        ("RequestDisk", request_disk(job))):
        if value is not None:
            out[attr] = value
    return out


def transfer_mode(job: Job) -> tuple[str, str | None]:
    stf = job.get("should_transfer_files")
    stf = "IF_NEEDED" if stf is None else unquoted(stf).upper()
    stf = {"TRUE": "YES", "FALSE": "NO", "IF_NEEDED": "IF_NEEDED", "YES": "YES", "NO": "NO"}.get(stf, stf)
    if stf not in ("YES", "NO", "IF_NEEDED"):
        raise SubmitError(f"should_transfer_files = {stf}: must be YES, NO or IF_NEEDED")
    when = job.get("when_to_transfer_output")
    when = "ON_EXIT" if when is None else unquoted(when).upper()
    if when not in ("ON_EXIT", "ON_EXIT_OR_EVICT", "ON_SUCCESS"):
        raise SubmitError(f"when_to_transfer_output = {when}: must be ON_EXIT, ON_EXIT_OR_EVICT or ON_SUCCESS")
    if when == "ON_EXIT_OR_EVICT":
        if stf == "NO":
            raise SubmitError("when_to_transfer_output = ON_EXIT_OR_EVICT needs should_transfer_files = YES")
        stf = "YES"
    return stf, (None if stf == "NO" else when)


@rule("should_transfer_files", "when_to_transfer_output")
def _transfer(job: Job) -> dict[str, str]:
    stf, when = transfer_mode(job)
    out = {"ShouldTransferFiles": quote(stf)}
    if when is not None:
        out["WhenToTransferOutput"] = quote(when)
    return out


@rule("transfer_input_files", "transfer_output_files", "transfer_output_remaps")
def _transfer_files(job: Job) -> dict[str, str]:
    out = {}
    for command, attr in (("transfer_input_files", "TransferInput"),
                          ("transfer_output_files", "TransferOutput")):
        text = job.get(command)
        if text is not None:
            out[attr] = quote(comma_list(text))
    remaps = job.get("transfer_output_remaps")
    if remaps is not None:
        out["TransferOutputRemaps"] = quote(unquoted(remaps))
    return out


# condor_submit -spool: a completed job waits (ten days at most) for its output to be retrieved.
SPOOLED_LEAVE_IN_QUEUE = ("JobStatus == 4 && (CompletionDate =?= UNDEFINED || CompletionDate == 0 || "
                          "((time() - CompletionDate) < 864000))")


@rule("hold", "leave_in_queue")
def _hold(job: Job) -> dict[str, str]:
    text = job.get("hold")
    if job.spool:
        out = {"JobStatus": "5", "HoldReasonCode": "16", "HoldReasonSubCode": "0",
               "HoldReason": quote("Spooling input data files")}
        if job.get("leave_in_queue") is None:
            out["LeaveJobInQueue"] = SPOOLED_LEAVE_IN_QUEUE
        return out
    if text is not None and boolean(text, "hold"):
        return {"JobStatus": "5", "HoldReasonCode": "15", "HoldReasonSubCode": "0",
                "HoldReason": quote("submitted on hold at user's request")}
    return {"JobStatus": "1"}


@rule("on_exit_remove", "on_exit_hold", "max_retries", "success_exit_code", "retry_until")
def _exit_policy(job: Job) -> dict[str, str]:
    remove, hold = job.get("on_exit_remove"), job.get("on_exit_hold")
    retries, success, until = job.get("max_retries"), job.get("success_exit_code"), job.get("retry_until")
    out = {}
    if retries is None and success is None and until is None:
        if remove is not None:
            out["OnExitRemove"] = expr(remove, "on_exit_remove")
        if hold is not None:
            out["OnExitHold"] = expr(hold, "on_exit_hold")
        return out
    out["JobMaxRetries"] = str(integer(retries, "max_retries") if retries else DEFAULT_JOB_MAX_RETRIES)
    test = "ExitCode =?= 0"
    if success is not None:
        out["JobSuccessExitCode"] = str(integer(success, "success_exit_code"))
        test = "ExitCode =?= JobSuccessExitCode"
    clause = f"NumJobCompletions > JobMaxRetries || {test}"
    if remove is not None:
        clause += f" || ({expr(remove, 'on_exit_remove')})"
    if until is not None:
        until = until.strip()
        clause += f" || ExitCode =?= {until}" if until.lstrip("-").isdigit() else \
            f" || ({expr(until, 'retry_until')})"
    out["OnExitRemove"] = clause
    out["OnExitHold"] = expr(hold, "on_exit_hold") if hold is not None else "false"
    return out


@rule("notification")
def _notification(job: Job) -> dict[str, str]:
    text = job.get("notification")
    if text is None:
        return {"JobNotification": "0"}
    value = NOTIFICATIONS.get(text.strip().lower())
    if value is None:
        raise SubmitError(f"notification = {text}: must be Never, Always, Complete, Error or Start")
    return {"JobNotification": str(value)}


@rule("accounting_group", "accounting_group_user", "nice_user", "project_name")
def _accounting(job: Job) -> dict[str, str]:
    group, user = job.get("accounting_group"), job.get("accounting_group_user")
    nice = job.get("nice_user")
    out = {}
    project = job.get("project_name")
    if project is not None:        # a string, as HTCondor's SetAccountingGroup assigns it
        out["ProjectName"] = quote(unquoted(project))
    if nice is not None and boolean(nice, "nice_user"):
        group = "nice-user"
        out["MaxJobRetirementTime"] = "0"
    if user is not None:
        out["AcctGroupUser"] = quote(unquoted(user))
    if group is not None:
        group = unquoted(group)
        who = unquoted(user) if user is not None else job.owner
        out["AcctGroup"] = quote(group)
        out["AccountingGroup"] = quote(f"{group}.{who}" if who else group)
    return out


@rule("use_oauth_services", "send_credential")
def _credentials(job: Job) -> dict[str, str]:
    """The credentials a job's sandbox gets (``_CONDOR_CREDS``): OAuth services by name
    (``service*handle`` with a handle), and with ``send_credential`` the Kerberos one."""
    out = {}
    services = job.get("use_oauth_services")
    if services is not None:
        names = [n for n in re.split(r"[\s,]+", unquoted(services).strip()) if n]
        if names:
            out["OAuthServicesNeeded"] = quote(",".join(names))
    send = job.get("send_credential")
    if send is not None and boolean(send, "send_credential"):
        out["SendCredential"] = "true"
    return out


@rule("machine_count")
def _hosts(job: Job) -> dict[str, str]:
    text = job.get("machine_count")
    n = str(integer(text, "machine_count")) if text is not None else "1"
    return {"MinHosts": n, "MaxHosts": n}


@rule("deferral_time", "deferral_window", "deferral_prep_time")
def _deferral(job: Job) -> dict[str, str]:
    when = job.get("deferral_time")
    if when is None:
        return {}
    window, prep = job.get("deferral_window"), job.get("deferral_prep_time")
    return {"DeferralTime": expr(when, "deferral_time"),
            "DeferralWindow": expr(window, "deferral_window") if window else "0",
            "DeferralPrepTime": expr(prep, "deferral_prep_time") if prep else "300",
            "ScheddInterval": "60"}


@rule("checkpoint_exit_code")
def _checkpoint(job: Job) -> dict[str, str]:
    text = job.get("checkpoint_exit_code")
    if text is None:
        return {}
    return {"SuccessCheckpointExitCode": str(integer(text, "checkpoint_exit_code")),
            "WantFTOnCheckpoint": "true"}


@rule("kill_sig")
def _kill_sig(job: Job) -> dict[str, str]:
    text = job.get("kill_sig")
    return {"KillSig": quote(unquoted(text))} if text is not None else {}


def _simple_rule(command: str, attr: str, kind: str):
    fallback = attr.lower()

    def convert(job: Job) -> dict[str, str]:
        text = job.raw(command) or job.raw(fallback)
        if not text:
            return {}
        if kind == "expr":
            return {attr: expr(text, command)}
        if kind == "int":
            return {attr: str(integer(text, command))}
        return {attr: quote(unquoted(text))}
    return convert


for _command, _attr, _kind in SIMPLE:
    RULES.append(((_command, _attr.lower()), _simple_rule(_command, _attr, _kind)))


GPU_LIMITS = (("gpus_minimum_capability", "GPUsMinCapability", "Capability >= {}"),
              ("gpus_maximum_capability", "GPUsMaxCapability", "Capability <= {}"),
              ("gpus_minimum_memory", "GPUsMinMemory", "GlobalMemoryMb >= {}"))


def _gpu_limit(job: Job, command: str) -> str | None:
    value = job.get(command)
    if value is None:
        return None
    return size(value, 2, command) if command == "gpus_minimum_memory" else expr(value, command)


def require_gpus(job: Job) -> str | None:
    """The RequireGPUs expression (a test on each GPU's properties), or None.

    HTCondor writes the limits as references (``Capability >=
    GPUsMinCapability``) and relies on the match scope to find the job's
    attribute from inside a GPU's nested ad; we write the values, which
    test the same and do not depend on that scoping."""
    clauses = [f"({expr(job.get('require_gpus'), 'require_gpus')})"] if job.get("require_gpus") else []
    for command, _, test in GPU_LIMITS:
        value = _gpu_limit(job, command)
        if value is not None:
            clauses.append(test.format(value))
    return " && ".join(clauses) or None


@rule("request_gpus", "require_gpus", "gpus_minimum_capability", "gpus_maximum_capability",
      "gpus_minimum_memory")
def _gpus(job: Job) -> dict[str, str]:
    text = job.get("request_gpus")
    if text is None:
        return {}
    out = {"RequestGPUs": expr(text, "request_gpus")}
    for command, attr, _ in GPU_LIMITS:
        value = _gpu_limit(job, command)
        if value is not None:
            out[attr] = value
    required = require_gpus(job)
    if required:
        out["RequireGPUs"] = required
    return out


REQUIREMENT_INPUTS = ("requirements", "request_cpus", "request_memory", "request_disk", "universe",
                      "should_transfer_files", "when_to_transfer_output", "deferral_time", "docker_image",
                      "container_image", "request_gpus", "require_gpus", "gpus_minimum_capability",
                      "gpus_maximum_capability", "gpus_minimum_memory")


@rule(*REQUIREMENT_INPUTS)
def _requirements(job: Job) -> dict[str, str]:
    return {"Requirements": requirements_text(job, ())}


@rule(*REQUIREMENT_INPUTS, "transfer_input_files", "output_destination")
def _plugin_requirements(job: Job) -> dict[str, str]:
    """Requirements again, with the transfer-plugin clause, for jobs that
    move URLs (a separate rule so a per-job file list does not make every
    job recompute Requirements)."""
    schemes = url_schemes(job)
    return {"Requirements": requirements_text(job, schemes)} if schemes else {}


def requirements_text(job: Job, plugins) -> str:
    user = job.get("requirements")
    if user is not None:
        expr(user, "requirements")
    stf, _ = transfer_mode(job)
    number, name = universe_of(job)
    container = "docker" if name == "docker" or job.get("docker_image") else \
        "container" if name == "container" or job.get("container_image") else None
    gpus = job.get("request_gpus")
    gpus = None if gpus is None else (gpus, require_gpus(job) is not None)
    return default_requirements(user, number, container, request_cpus(job), request_memory(job),
                                request_disk(job), stf, job.get("deferral_time") is not None,
                                custom_requests=sorted(k for k in job.names() if _is_custom_request(k)),
                                gpus=gpus, plugins=plugins)


def url_schemes(job: Job) -> list[str]:
    """Schemes of the URLs in transfer_input_files and output_destination."""
    urls = [p.strip() for p in (job.get("transfer_input_files") or "").split(",")]
    urls.append(unquoted(job.get("output_destination") or ""))
    return sorted({u.split("://", 1)[0].lower() for u in urls if "://" in u})


_KNOWN_REQUESTS = {"request_cpus", "request_memory", "request_disk", "request_gpus"}


def _is_custom_request(name: str) -> bool:
    return name.startswith("request_") and name not in _KNOWN_REQUESTS and len(name) > 8


def custom_request_rules(keys: dict[str, str]) -> list:
    """``request_<tag>`` commands (other than cpus/memory/disk/gpus)."""
    out = []
    for low, spelling in keys.items():
        if _is_custom_request(low):
            if low == "request_cpu":
                continue
            attr = "Request" + spelling[len("request_"):]
            out.append(((low,), _simple_rule(low, attr, "expr")))
    return out


def custom_attribute_rules(keys: dict[str, str]) -> list:
    """``MY.Attr`` / ``+Attr`` commands: the value verbatim, as an expression."""
    out = []
    for low, spelling in keys.items():
        if low.startswith("my.") or low.startswith("+"):
            name = spelling[3:] if low.startswith("my.") else spelling[1:]
            if name:
                out.append(((low,), _custom_rule(low, name)))
    return out


def _custom_rule(command: str, attr: str):
    def convert(job: Job) -> dict[str, str]:
        text = job.raw(command)
        if not text:
            return {}
        return {attr: expr(text, "+" + attr)}
    return convert


def warnings_for(keys: dict[str, str]) -> list[str]:
    out = []
    if "request_cpu" in keys:
        out.append("the line 'request_cpu' was unused by condor_submit. Is it a typo?")
    return out


@rule("x509userproxy", "initialdir")
def _x509_proxy(job: Job) -> dict[str, str]:
    """``x509userproxy``: the proxy file's full path (as condor_submit writes it, relative
    to the job's initial directory); the starter puts a copy in the sandbox and points
    X509_USER_PROXY at it, and ``Schedd.refreshGSIProxy`` replaces both."""
    path = job.get("x509userproxy")
    if path is None or not path.strip():
        return {}
    return {"x509userproxy": quote(absolute(path.strip(), iwd_of(job)))}
