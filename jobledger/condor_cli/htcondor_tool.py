"""htcondor: HTCondor's noun-verb tool for jobs, job sets, DAGs and event logs.

    htcondor job submit FILE [--resource R --runtime S]   one job from a submit file
    htcondor job status ID | resources ID
    htcondor jobset submit FILE | list [--allusers] | status NAME | remove NAME
    htcondor dag submit FILE | status ID | resources ID | halt ID | resume ID
    htcondor eventlog read LOG                              one summary line per job

As HTCondor's tool (src/condor_tools/htcondor_cli): what it says goes to stderr
through a logger (one message a line), tables to stdout; a failing verb prints
"Error while trying to run NOUN VERB:" and the reason, exit status 1; bad
arguments print the usage, exit status 2.  The job-set file language is
HTCondor's (name, iterator table with inline rows, job blocks with renamed
variables); its jobs carry JobSetName and InJobSet, and the schedd keeps the set
(USE_JOBSETS).  Submit methods are recorded as HTCondor's: 3 for job submit,
4 for dag submit, 5 for jobset submit.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from jobledger.condor_cli import htcondor_dags as dags
from jobledger.condor_cli import htcondor_jobsets as jobsets
from jobledger.condor_cli import htcondor_reports as reports
from jobledger.eventcore.enums import SubmitMethod

DESCRIPTION = "A tool for managing HTCondor jobs and resources."


class _Parser(argparse.ArgumentParser):
    """Errors raise (the tool prints them its own way) instead of exiting."""

    def error(self, message):
        raise argparse.ArgumentError(None, message)


def _readable(path: str) -> Path:
    file = Path(path)
    if not file.exists():
        raise FileNotFoundError(f"Could not find file: {path}")
    if not os.access(file, os.R_OK):
        raise PermissionError(f"Could not access file: {path}")
    return file


def job_submit(log: logging.Logger, submit_file: str, resource: str | None = None,
               runtime: int | None = None, **_) -> None:
    """One job from a submit file to the local schedd (job submit's --resource slurm/ec2
    provision remote machines first, which this pool cannot: they fail as HTCondor's do
    without --runtime, and otherwise say so)."""
    file = _readable(submit_file)
    kind = (resource or "htcondor").casefold()
    if kind in ("slurm", "ec2"):
        if runtime is None and kind == "ec2":
            raise TypeError("Error: EC2 resources must specify a --runtime argument")
        if runtime is None:
            raise TypeError("Slurm resources must specify a runtime argument")
        raise ValueError(f"{kind} resources are not provisioned by this pool")
    if kind != "htcondor":
        raise ValueError(f"Unknown resource {resource!r}")
    import jobledger
    description = jobledger.Submit(file.read_text())
    description.setSubmitMethod(int(SubmitMethod.HTCondorJobSubmit), True)
    qargs = description.getQArgs()
    if qargs not in ("", "1"):
        raise ValueError("Can only submit one job at a time")
    try:
        result = jobledger.Schedd().submit(description, count=1)
    except Exception as exc:
        raise RuntimeError(f"Error submitting job:\n{exc}") from None
    log.info(f"Job {result.cluster()} was submitted.")


def dag_submit(log: logging.Logger, dag_filename: str, **_) -> None:
    """A DAG as a DAGMan job (condor_submit_dag's checks and files)."""
    _readable(dag_filename)
    import jobledger
    description = jobledger.Submit.from_dag(dag_filename)
    description.setSubmitMethod(int(SubmitMethod.HTCondorDagSubmit), True)
    result = jobledger.Schedd().submit(description)
    log.info(f"DAG {result.cluster()} was submitted.")


# noun -> verb -> (handler, [(argument names, argparse keywords)], help)
VERBS: dict[str, dict[str, tuple]] = {
    "job": {
        "submit": (job_submit, [(("submit_file",), {"help": "Submit file"}),
                                (("--resource",), {"help": "Resource to run this job (Slurm, EC2)"}),
                                (("--runtime",), {"type": int, "help": "Runtime for the resource (seconds)"}),
                                (("--email",), {"help": "Email address to receive notifications"})],
                   "Submits a job when given a submit file"),
        "status": (reports.job_status, [(("job_id",), {"help": "Job ID"})],
                   "Shows current status of a job when given a job id"),
        "resources": (reports.job_resources, [(("job_id",), {"help": "Job ID"})],
                      "Shows resources used by a job when given a job id"),
    },
    "jobset": {
        "submit": (jobsets.submit, [(("job_set_file",), {"help": "Job set submit file"})],
                   "Submits a job set when given a job set file"),
        "list": (jobsets.list_sets, [(("--allusers",), {"action": "store_true",
                                                        "help": "List active sets from all users"})],
                 "List all active job sets"),
        "status": (jobsets.status, [(("job_set_name",), {"help": "Job set name"}),
                                    (("--owner",), {"help": "Show sets of this user"})],
                   "Displays given active job set status"),
        "remove": (jobsets.remove, [(("job_set_name",), {"help": "Job set name"}),
                                    (("--owner",), {"help": "Remove sets of this user"})],
                   "Removes a given job set"),
    },
    "dag": {
        "submit": (dag_submit, [(("dag_filename",), {"help": "DAG file"})],
                   "Submits a DAG when given a DAG file"),
        "status": (dags.status, [(("dag_id",), {"type": int, "help": "DAG ID"})],
                   "Shows current status of a DAG when given a DAG id"),
        "resources": (dags.resources, [(("dag_id",), {"type": int, "help": "DAG ID"})],
                      "Shows the node jobs of a DAG and the resources they use"),
        "halt": (dags.halt, [(("dag_id",), {"type": int, "help": "DAG ID"}),
                             (("-r", "--reason"), {"default": None, "metavar": "MESSAGE",
                                                   "help": "Reason for halting specified DAG"}),
                             (("-p", "--pause"), {"action": "store_true", "help": argparse.SUPPRESS})],
                 "Halt the progress of a DAG specified by a DAG id."),
        "resume": (dags.resume, [(("dag_id",), {"type": int, "help": "DAG ID"})],
                   "Resume progress of a halted DAG specified by a DAG id."),
    },
    "eventlog": {
        "read": (reports.eventlog_read, [(("log_file",), {"help": "Log file"})], "Reads an eventlog"),
    },
}
NOUN_HELP = {"job": "Run operations on HTCondor jobs", "jobset": "Run operations on HTCondor job sets",
             "dag": "Run operations on HTCondor DAGs", "eventlog": "Interacts with eventlogs"}


def _parser() -> tuple[_Parser, dict[str, _Parser]]:
    top = _Parser(prog="htcondor", description=DESCRIPTION)
    top.add_argument("-v", action="count", default=0, dest="verbose", help="Increase verbosity of output")
    top.add_argument("-q", action="count", default=0, dest="quiet", help="Decrease verbosity of output")
    nouns = top.add_subparsers(description="", help="Types of HTCondor objects that can be managed", dest="noun")
    noun_parsers = {}
    for noun, verbs in VERBS.items():
        noun_parser = nouns.add_parser(noun, description=NOUN_HELP[noun])
        noun_parsers[noun] = noun_parser
        subs = noun_parser.add_subparsers(description="", help=f"Types of actions you can take on {noun}s",
                                          dest="verb")
        for verb, (_, arguments, help_text) in verbs.items():
            verb_parser = subs.add_parser(verb, description=help_text)
            for names, keywords in arguments:
                verb_parser.add_argument(*names, **keywords)
    return top, noun_parsers


class _Stderr(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time of the message."""

    @property  # type: ignore[override]
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass


def _logger(name: str, level: int) -> logging.Logger:
    log = logging.getLogger(name)
    if not log.handlers:
        handler = _Stderr()
        handler.setFormatter(logging.Formatter("%(message)s"))
        log.addHandler(handler)
    log.propagate = False
    log.setLevel(level)
    return log


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    top, noun_parsers = _parser()
    log = _logger("htcondor", logging.INFO)
    try:
        parsed = vars(top.parse_args(args))
    except argparse.ArgumentError as exc:
        log.error(f"{top.format_help()}\n{exc}")
        return 2
    except SystemExit as exc:          # -h
        return int(exc.code or 0)
    level = min(logging.CRITICAL, max(logging.DEBUG,
                                      logging.INFO + 10 * (parsed.pop("quiet") - parsed.pop("verbose"))))
    noun, verb = parsed.pop("noun"), parsed.pop("verb", None)
    if noun is None:
        log.error(top.format_help().rstrip())
        return 2
    if verb is None:
        log.error(noun_parsers[noun].format_help().rstrip())
        return 2
    from jobledger.condor_cli import pool
    pool.load_config()
    verb_log = _logger(f"htcondor.{noun}.{verb}", level)
    try:
        VERBS[noun][verb][0](verb_log, **parsed)
    except Exception as exc:           # the tool's one error line per failure, as HTCondor's
        log.error(f"Error while trying to run {noun} {verb}:\n{exc}")
        return 1
    return 0


def console() -> None:
    sys.exit(main())
