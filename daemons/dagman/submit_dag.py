"""condor_submit_dag's job: check the DAG, write ``<dag>.condor.sub``, describe the DAGMan job.

The DAGMan job is a scheduler-universe job (the schedd runs it locally)
whose program is ``python -m jobledger.daemons.dagman`` with condor_dagman's
arguments.  Its on_exit_remove is HTCondor's: exit codes 0-2 end it,
anything else (a signal, a crash) puts it back in the queue, so the schedd
restarts it and it recovers.  OtherJobRemoveRequirements makes removing it
remove its node jobs.

As HTCondor's condor_submit_dag (dagman_utils.cpp, ensureOutputFilesExist), a
DAG whose files from an earlier run are still there -- ``<dag>.condor.sub``,
``.lib.out``, ``.lib.err``, ``.dagman.log`` -- is not submitted again
(``DagOutputExists``, one "already exists" line per file) unless a rescue DAG
is run (AutoRescue finds one, or ``dorescuefrom``) or ``force`` is given:
``force`` removes those files and renames every rescue DAG to ``<name>.old``,
so the DAG runs from the start.
"""

from __future__ import annotations

import os
import re
import sys

from jobledger.daemons.dagman.files import newest_rescue, read_bytes, rescue_numbers
from jobledger.eventcore.dagman import parse_dag
from jobledger.eventcore.dagman.report import rescue_name
from jobledger.eventcore.errors import DagError, HTCondorException

ON_EXIT_REMOVE = "(ExitSignal =?= 11 || (ExitCode =!= UNDEFINED && ExitCode >=0 && ExitCode <= 2))"
# from_dag option -> (condor_dagman flag, type); htcondor2.Submit.from_dag_options' names.
OPTIONS = {
    "maxjobs": ("-MaxJobs", int), "maxidle": ("-MaxIdle", int), "maxpre": ("-MaxPre", int),
    "maxpost": ("-MaxPost", int), "maxhold": ("-MaxHold", int), "dorescuefrom": ("-DoRescueFrom", int),
    "force": ("-Force", bool), "dorecov": ("-DoRecov", bool), "allowversionmismatch": ("-AllowVersionMismatch", bool),
    "debug": ("-Debug", int), "verbose": ("-Verbose", bool), "suppress_notification": ("-Suppress_notification", bool),
    "outfile_dir": ("-Outfile_dir", str), "batch_name": ("-Batch_name", str), "batch-name": ("-Batch_name", str),
    "autorescue": ("-AutoRescue", int), "priority": ("-Priority", int), "notification": (None, str),
    "usedagdir": ("-UseDagDir", bool), "load_save": ("-load_save", str), "no_submit": (None, bool),
    "update_submit": (None, bool),
    # HTCondor's own option names (dagman_utils.h, dagOptionsInfoMap), as from_dag takes them too
    "batchname": ("-Batch_name", str), "outfiledir": ("-Outfile_dir", str), "dorecovery": ("-DoRecov", bool),
    "suppressnotification": ("-Suppress_notification", bool), "savefile": ("-load_save", str),
    "submitmethod": ("-SubmitMethod", int), "addtoenv": (None, str), "appendfile": (None, str),
    "rescuefile": ("-RescueFile", str),
}
# option -> the name it is kept under (HTCondor's names for ones jobledger spelled first)
SAME_AS = {"batchname": "batch_name", "batch-name": "batch_name", "outfiledir": "outfile_dir",
           "dorecovery": "dorecov", "suppressnotification": "suppress_notification", "savefile": "load_save"}
# HTCondor's dagOptsMutualExclusions (dagman_utils.h): an option -> the ones it cannot join
EXCLUSIONS = {"DoRecovery": {"SaveFile"}, "DoRescueFrom": {"SaveFile", "RescueFile"},
              "RescueFile": {"SaveFile", "DoRescueFrom"}, "SaveFile": {"DoRecovery", "DoRescueFrom", "RescueFile"}}
EXCLUSION_NAMES = {"dorecov": "DoRecovery", "dorecovery": "DoRecovery", "dorescuefrom": "DoRescueFrom",
                   "rescuefile": "RescueFile", "load_save": "SaveFile", "savefile": "SaveFile"}
EXCLUSION_FLAGS = {"DoRecovery": "-DoRecovery", "DoRescueFrom": "-DoRescueFrom", "RescueFile": "-RescueFile",
                   "SaveFile": "-load_save"}
OUTPUT_FILES = (".condor.sub", ".lib.out", ".lib.err", ".dagman.log")
# What condor_submit_dag's DAGMan job always takes from the submitter's environment
# (HTCondor's dagman_utils.cpp, writeSubmitFile)
DAGMAN_GETENV = ("CONDOR_CONFIG,_CONDOR_*,PATH,PYTHONPATH,PERL*,PEGASUS_*,TZ,HOME,USER,LANG,LC_ALL,"
                 "ASAN_OPTIONS,LSAN_OPTIONS,BEARER_TOKEN,BEARER_TOKEN_FILE")


class DagOutputExists(HTCondorException):
    """Files of an earlier run of the DAG are in the way (``problems``: HTCondor's lines)."""

    def __init__(self, problems: list[str]):
        super().__init__("Unable to write condor_dagman output files")
        self.problems = problems

    def explained(self, force_hint: str) -> str:
        """HTCondor's whole message, ``force_hint`` saying how to force (its "-f" line)."""
        return "\n".join(self.problems) + ("\n\nSome file(s) needed by condor_dagman already exist. "
                                           f"Either:\n- Rename them\n{force_hint}")


CONDOR_SUBMIT_DAG_HINT = ('- Use the "-f" option to force them to be overwritten\n\tor\n'
                          '- Use the "-update_submit" option to update the submit file and continue.')
PYTHON_HINT = '\tor\n- Set the { "force" : True } option to force them to be overwritten.'


def make_room(dag_file: str, options: dict, cwd: str) -> None:
    """condor_submit_dag's check of an earlier run's files (see the module docstring)."""
    dag = os.path.join(cwd, dag_file)
    if options.get("force"):
        for suffix in OUTPUT_FILES:
            try:
                os.unlink(dag + suffix)
            except FileNotFoundError:
                pass
        for number in rescue_numbers(dag):
            os.replace(rescue_name(dag, number), rescue_name(dag, number) + ".old")
        return
    rescuing = (options.get("autorescue", 1) and rescue_numbers(dag)) or options.get("dorescuefrom", 0) > 0 \
        or options.get("rescuefile")
    # a run from a save point file (load_save) is a run again of the DAG, as a rescue one is:
    # HTCondor's upstream save-file test submits it again beside the first run's files
    if rescuing or options.get("update_submit") or options.get("load_save"):
        return
    problems = [f'ERROR: "{dag_file}{suffix}" already exists.' for suffix in OUTPUT_FILES
                if os.path.exists(dag + suffix)]
    if problems:
        raise DagOutputExists(problems)


def dagman_options() -> dict:
    """``Submit.from_dag_options()``: the option names and what they take."""
    return {name: kind.__name__ for name, (_, kind) in OPTIONS.items()}


def exclusion_problem(names, flags: bool = False) -> str | None:
    """The first option of ``names`` (in the order given) that cannot be used with one given
    before it, said as HTCondor's DagmanOptions::checkMutualExclusion says it (by option
    name, or by condor_submit_dag flag when ``flags``); None if they all go together."""
    seen: set[str] = set()
    for name in names:
        key = EXCLUSION_NAMES.get(str(name).lower())
        if key is None:
            continue
        clash = sorted(EXCLUSIONS[key] & seen, key=str.lower)
        if clash:
            listed = sorted((EXCLUSION_FLAGS[c] for c in clash), key=str.lower) if flags else clash
            what = ("flag" if flags else "option") + ("s" if len(clash) > 1 else "")
            return (f"{EXCLUSION_FLAGS[key] if flags else key} can not be used with the following "
                    f"{what}: {','.join(listed)}")
        seen.add(key)
    return None


def _checked(options: dict | None) -> dict:
    problem = exclusion_problem(list(options or {}))
    if problem is not None:        # HTCondor's bindings raise RuntimeError with this text
        raise RuntimeError(problem)
    out = {}
    for key, value in (options or {}).items():
        name = str(key).lower()
        if name not in OPTIONS:
            raise KeyError(f"{key!r} is not a DAGMan option (see Submit.from_dag_options())")
        kind = OPTIONS[name][1]
        if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
            raise TypeError(f"DAGMan option {key!r} must be an int")
        if kind is bool and not isinstance(value, bool):
            raise TypeError(f"DAGMan option {key!r} must be a bool")
        if kind is str and not isinstance(value, str):
            raise TypeError(f"DAGMan option {key!r} must be a str")
        out[SAME_AS.get(name, name)] = value
    return out


def dagman_program() -> str:
    """The condor_dagman command beside this interpreter (so the DAGMan job's Cmd ends in
    "dagman", as HTCondor's does), else the interpreter itself (``-m jobledger.daemons.dagman``)."""
    beside = os.path.join(os.path.dirname(sys.executable), "condor_dagman")
    return beside if os.access(beside, os.X_OK) else sys.executable


def dagman_command(dag_file: str, options: dict) -> list[str]:
    """The DAGMan job's arguments for ``dagman_program()``."""
    args = dagman_arguments(dag_file, options)
    return args[2:] if dagman_program() != sys.executable else args


def dagman_arguments(dag_file: str, options: dict) -> list[str]:
    args = ["-m", "jobledger.daemons.dagman", "-p", "0", "-f", "-l", ".", "-Lockfile", f"{dag_file}.lock",
            "-AutoRescue", str(options.get("autorescue", 1)), "-DoRescueFrom", str(options.get("dorescuefrom", 0)),
            "-Dag", dag_file, "-Suppress_notification", "-CsdVersion", "jobledger"]
    for name, value in options.items():
        flag, kind = OPTIONS[name]
        if flag is None or name in ("autorescue", "dorescuefrom"):
            continue
        if kind is bool:
            if value:
                args.append(flag)
        else:
            args += [flag, str(value)]
    return args


def check_dag(dag_file: str, options: dict, cwd: str):
    """Parse the DAG (and the rescue DAG it would use) now, so errors come before any submit;
    the parsed DAG."""
    def read(path: str) -> bytes:
        return read_bytes(os.path.join(cwd, path))
    if options.get("rescuefile"):      # -RescueFile: that file, whatever force says
        rescue: str | None = os.path.join(cwd, options["rescuefile"])
    else:
        rescue = None if options.get("force") else newest_rescue(os.path.join(cwd, dag_file),
                                                                  options.get("dorescuefrom", 0))
    dag = parse_dag(dag_file, read, rescue=os.path.relpath(rescue, cwd) if rescue else None)
    if dag.reject is not None:
        raise DagError("the DAG holds REJECT", dag.reject.source, dag.reject.line)
    return dag


def submit_text(dag_file: str, options: dict | None = None, cwd: str | None = None, strict: bool = True) -> str:
    """The ``<dag>.condor.sub`` text for ``dag_file`` (relative to ``cwd``), checked first.

    ``strict``: a DAG that does not parse is an error here (``DagError``), nothing written.
    Not strict, as HTCondor's condor_submit_dag and ``Submit.from_dag``: only a missing DAG
    file is; a DAG that does not parse is submitted all the same (without its SET_JOB_ATTR
    lines), and the DAGMan job says "Failed to parse" in its dagman.out and exits 1."""
    options = _checked(options)
    cwd = os.path.abspath(cwd or os.getcwd())
    try:
        parsed = check_dag(dag_file, options, cwd)
    except DagError:
        if strict or not os.path.isfile(os.path.join(cwd, dag_file)):
            raise
        parsed = None
    dag = dag_file
    batch = options.get("batch_name")
    lines = [
        f"# Filename: {dag}.condor.sub", f"# Generated by jobledger dag submit {dag}",
        "universe\t= scheduler", f"executable\t= {dagman_program()}", f"initialdir\t= {cwd}",
        f"output\t\t= {dag}.lib.out", f"error\t\t= {dag}.lib.err", f"log\t\t= {dag}.dagman.log",
        "remove_kill_sig\t= SIGUSR1", '+OtherJobRemoveRequirements\t= "DAGManJobId =?= $(cluster)"',
        f"on_exit_remove\t= {ON_EXIT_REMOVE}", "copy_to_spool\t= False",
        f"arguments\t= \"{' '.join(_quote_v2(a) for a in dagman_command(dag, options))}\"",
        f"environment\t= \"{environment(dag, options, parsed.env_set if parsed is not None else ())}\"",
        f"getenv\t\t= {getenv_list(parsed.env_get if parsed is not None else ())}",
        # no batch name unless one is given: DAGMan names its own job's batch when it starts
        # (as HTCondor's; so the job's SUBMIT event carries no structured notes of it)
        f"batch_name\t= {batch}" if batch else "",
        f"notification\t= {options.get('notification', 'never')}",
    ]
    # SET_JOB_ATTR: attributes of the DAGMan job itself, which condor_submit_dag writes into
    # this file as My.<name> = <value> lines (HTCondor's dagman_utils.cpp, writeSubmitFile)
    lines += append_file_lines(options, cwd)
    if parsed is not None:
        lines += [f"My.{name} = {value}" for name, value in parsed.set_job_attrs.items()]
    lines.append("queue")
    return "\n".join(line for line in lines if line) + "\n"


def getenv_list(names=()) -> str:
    """The DAGMan job's ``getenv``: what HTCondor's condor_submit_dag always takes from the
    submitter's environment, the DAG's ENV GET names, then DAGMAN_MANAGER_JOB_APPEND_GETENV
    (``true`` there: the whole environment)."""
    from jobledger.daemons.config_files import param
    extra = str(param.get("DAGMAN_MANAGER_JOB_APPEND_GETENV", "") or "").strip()
    if extra.lower() == "true":
        return "true"
    return ",".join([DAGMAN_GETENV, *names] + ([extra] if extra else []))


def environment(dag: str, options: dict, env_set=()) -> str:
    """The DAGMan job's environment (new syntax, without its quotes): DAGMan's log, then
    the ``AddToEnv`` pairs (``-insert_env``: key=value, delimited by ``;`` or ``,``), then
    the DAG's ENV SET pairs."""
    pairs = [f"_CONDOR_DAGMAN_LOG={dag}.dagman.out", "_CONDOR_MAX_DAGMAN_LOG=0"]
    listed = re.split(r"[;,]", options.get("addtoenv") or "") + [f"{key}={value}" for key, value in env_set]
    for pair in listed:
        pair = pair.strip()
        if not pair:
            continue
        key, sep, value = pair.partition("=")
        if not sep or not key.strip() or any(c in key for c in " \t'\""):
            raise HTCondorException(f"AddToEnv: {pair!r} is not key=value")
        value = value.strip()
        if any(c in value for c in " \t'\""):
            value = "'" + value.replace("'", "''").replace('"', '""') + "'"
        pairs.append(f"{key.strip()}={value}")
    return " ".join(pairs)


def append_file_lines(options: dict, cwd: str) -> list[str]:
    """The lines of the submit file appended to the DAGMan job's (``AppendFile``,
    ``-insert_sub_file``; by default DAGMAN_INSERT_SUB_FILE), as condor_submit_dag appends them."""
    path = options.get("appendfile")
    if path is None:
        from jobledger.daemons.config_files import param
        path = param.get("DAGMAN_INSERT_SUB_FILE", "") or ""
    if not path:
        return []
    try:
        text = read_bytes(os.path.join(cwd, path)).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise HTCondorException(f"unable to read submit append file ({path}): {exc}") from None
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def _quote_v2(word: str) -> str:
    """One argument in the submit language's new (double-quoted) syntax."""
    if not word or any(c in word for c in " \t'\""):
        return "'" + word.replace("'", "''").replace('"', '""') + "'"
    return word


def write_submit_file(dag_file: str, options: dict | None = None, cwd: str | None = None,
                      strict: bool = True) -> str:
    """condor_submit_dag -no_submit: check the DAG (``strict``: see ``submit_text``) and an
    earlier run's files (``DagOutputExists``), write ``<dag>.condor.sub``; returns its text."""
    text = submit_text(dag_file, options, cwd, strict)
    make_room(dag_file, _checked(options), os.path.abspath(cwd or os.getcwd()))
    path = os.path.join(os.path.abspath(cwd or os.getcwd()), f"{dag_file}.condor.sub")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    return text
