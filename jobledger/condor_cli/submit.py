"""condor_submit: the jobs of a submit description into the pool's schedd.

    condor_submit [options] [name=value ...] [- | FILE]

Prints "Submitting job(s)" and a dot per job, then "N job(s) submitted to
cluster C." (``-terse``: "C.0 - C.N"); a description read from ``-`` prints
each proc's ad instead (as HTCondor's implied ``-verbose``).  A submit that
fails submits nothing and exits 1 with "ERROR: ..." on stderr.

Before anything is queued (or dry-run), the executable of every job is
checked as HTCondor's condor_submit checks it (``check_sub_file``): one that
will be transferred -- not ``transfer_executable = false``, not a vm
universe or ec2/gce/azure grid job, no ``$$(...)`` in its name -- must exist
("Can't access executable file"), not be empty, and not be a script with
CRLF line endings (unless ``-allow-crlf-script``); ``skip_filechecks = warn``
makes these warnings.  The htcondor2 API's ``Schedd.submit`` checks none of
this, as HTCondor's does not: its job is held when the starter cannot run it.
"""

from __future__ import annotations

import os
import sys

from jobledger.eventcore.enums import SubmitMethod
from jobledger.eventcore.errors import SubmitError

from jobledger.condor_cli import pool
from jobledger.condor_cli.args import Args, Failed, Help, Usage, entry

PROG = "condor_submit"

USAGE = f"""\
Usage: {PROG} [options] [<attrib>=<value>] [- | <submit-file>]
    [options] are
\t-file <submit-file>\tthe submit description to read
\t-terse\t\t\tprint only the job id range of each cluster
\t-verbose\t\tprint each job's ClassAd
\t-append <line>\t\ta submit command added before the queue statement (repeatable)
\t-queue <queue-opts>\tthe queue statement to use
\t-batch-name <name>\tthe batch name of the jobs
\t-dry-run <filename>\twrite the job ClassAds to <filename> (- for stdout); submit nothing
\t-spool\t\t\tspool the input files to the schedd
\t-name <name>\t\tsubmit to the schedd of this name
\t-disable\t\tskip file permission checks
\t<attrib>=<value>\tset a macro before reading the submit file
"""

_VALID_NAME = __import__("re").compile(r"^\+?[A-Za-z_][A-Za-z0-9_.]*$")


class Options:
    def __init__(self) -> None:
        self.file: str | None = None
        self.terse = False
        self.verbose = False
        self.appends: list[str] = []
        self.macros: list[str] = []
        self.queue: str | None = None
        self.batch_name: str | None = None
        self.dry_run: str | None = None
        self.spool = False
        self.name: str | None = None
        self.pool: str | None = None
        self.allow_crlf_script = False
        self.factory = False


def parse(argv: list[str]) -> Options:
    opts = Options()
    args = Args(argv, PROG)
    for arg in args:
        if arg == "-":
            opts.file = "-"
        elif not args.is_flag():
            if "=" in arg:
                name, _, value = arg.partition("=")
                name = name.strip()
                if not _VALID_NAME.match(name):
                    raise Usage(f"{PROG}: invalid attribute name '{name}' for attrib=value assigment",
                                show_usage=False)
                opts.macros.append(f"{name} = {value.strip()}")
            else:
                opts.file = arg
        elif args.flag("verbose", 1):
            opts.verbose, opts.terse = True, False
        elif args.flag("terse", 3):
            opts.terse, opts.verbose = True, False
        elif args.flag("allow-crlf-script", 8):
            opts.allow_crlf_script = True
        elif args.flag("disable", 3) or args.flag("unused", 1):
            pass
        elif args.flag("dry-run", 3):
            if args.index + 1 >= len(args.argv) or (args.argv[args.index + 1].startswith("-")
                                                    and args.argv[args.index + 1] != "-"):
                raise Usage(f"{PROG}: -dry-run requires another argument", show_usage=False)
            opts.dry_run = args.value()
        elif args.flag("spool", 1):
            opts.spool = True
        elif args.flag("factory", 2):
            opts.factory = True
        elif args.flag("file", 2):
            opts.file = args.value()
        elif args.flag("name", 1):
            opts.name = args.value()
        elif args.flag("pool", 1):
            opts.pool = args.value()
        elif args.flag("append", 1):
            line = args.value()
            if line.strip().lower().split(" ")[0] == "queue":
                _one_queue(opts, line)
            else:
                opts.appends.append(line)
        elif args.flag("batch-name", 1):
            opts.batch_name = args.value()
        elif args.flag("queue", 1):
            if args.index + 1 >= len(args.argv) or args.argv[args.index + 1].startswith("-"):
                raise Usage(f"{PROG}: {arg} requires at least one argument", show_usage=False)
            _one_queue(opts, " ".join(args.words()))
        elif args.flag("help", 1):
            raise Help()
        else:
            raise Usage()
    return opts


def _one_queue(opts: Options, line: str) -> None:
    if opts.queue is not None:
        raise Usage(f"{PROG}: only one -queue command allowed", show_usage=False)
    words = line.strip()
    opts.queue = words[5:].strip() if words.lower().startswith("queue") else words


def description(opts: Options):
    """The ``Submit`` the options describe (file or stdin, macros, appends, batch name)."""
    from jobledger.daemons.input_files import read_stream_text
    from jobledger.daemons.client.submit import Submit, read_submit_file
    where = "(stdin)" if opts.file in (None, "-") else opts.file
    try:
        text = read_stream_text(sys.stdin, where) if where == "(stdin)" else read_submit_file(where)
    except OSError as exc:
        raise Failed(f"\nERROR: Failed to open command file ({where}) ({exc.strerror or exc})") from None
    except SubmitError as exc:
        raise Failed(f"\nERROR: {_submit_error(exc, where)}") from None
    head = "".join(line + "\n" for line in opts.macros)
    try:
        sub = Submit(head + text)
        for line in opts.appends + ([f"batch_name = {opts.batch_name}"] if opts.batch_name else []):
            for key, value in Submit(line).items():
                sub[key] = value
    except SubmitError as exc:
        raise Failed(f"\nERROR: {_submit_error(exc, where)}") from None
    if opts.queue is None and not _has_queue(text + "\n" + "\n".join(opts.appends)):
        raise Failed(f'\nERROR: "{where}" doesn\'t contain any "queue" commands -- no jobs queued')
    sub.setSubmitMethod(int(SubmitMethod.CondorSubmit), True)     # JobSubmitMethod = 0, as HTCondor's
    sub.as_factory = opts.factory     # -factory: a job factory even without max_materialize
    return sub


def _has_queue(text: str) -> bool:
    return any(line.strip().lower().split(" ")[0].split("\t")[0] == "queue" for line in text.splitlines())


def _submit_error(exc: SubmitError, where: str) -> str:
    source = exc.source if exc.source not in ("<submit>", None) else where
    return str(SubmitError(exc.message, exc.line, exc.text, source))


def run(argv: list[str]) -> int:
    opts = parse(argv)
    if opts.file is None and opts.dry_run and opts.queue is None:
        raise Failed(f"\nERROR: No submit filename was provided, and '{opts.dry_run}'\n"
                     "  was given as the output filename for -dry-run.")
    from_stdin = opts.file == "-"
    verbose = opts.verbose or (from_stdin and not opts.terse)
    sub = description(opts)
    if opts.dry_run:
        return _dry_run(sub, opts)
    target = pool.schedd(opts.name, opts.pool)
    if not opts.terse and not from_stdin:
        print("Submitting job(s)", end="", flush=True)
    check_executables(sub, opts)
    try:
        result = target.submit(sub, queue=opts.queue, spool=opts.spool) if opts.queue else \
            target.submit(sub, spool=opts.spool)
    except SubmitError as exc:
        raise Failed(f"\nERROR: {_submit_error(exc, opts.file or '(stdin)')}") from None
    if opts.spool:
        target.spool(result)
    cluster, first, count = result.cluster(), result.first_proc(), result.num_procs()
    if verbose:
        for ad in target.query(f"ClusterId == {cluster}"):
            print(f"\n** Proc {cluster}.{ad['ProcId']}:\n{ad.printOld()}", end="")
    elif not opts.terse:
        print("." * count)
    if opts.terse:
        print(f"{cluster}.{first} - {cluster}.{first + count - 1}")
    elif not verbose:
        print(f"{count} job(s) submitted to cluster {cluster}.")
    return 0


def _dry_run(sub, opts: Options) -> int:
    try:
        check_executables(sub, opts)
    except Failed:
        if not opts.terse:
            print("Dry-Run job(s)", end="", flush=True)
        raise
    try:
        plan = sub.cluster(clusterid=1, queue=opts.queue, owner=pool.user_name(), spool=opts.spool)
        ads = list(plan.ads())
    except SubmitError as exc:
        raise Failed(f"\nERROR: {_submit_error(exc, opts.file or '(stdin)')}") from None
    text = "".join(ad.printOld() + "\n" for ad in ads)
    if opts.dry_run == "-":
        sys.stdout.write(text)
    else:
        with open(opts.dry_run, "w", encoding="utf-8") as fh:
            fh.write(text)
    if not opts.terse:
        print("Dry-Run job(s)" + "." * len(ads))
        print(f"{len(ads)} job(s) dry-run to cluster 1.")
    else:
        print(f"1.0 - 1.{len(ads) - 1}")
    return 0


NOT_TRANSFERRED_GRIDS = ("ec2", "gce", "azure")   # their "executable" only names the job


def check_executables(sub, opts: Options) -> None:
    """condor_submit's checks of each job's executable (see the module docstring):
    ``Failed`` with HTCondor's message, or its warnings on stderr."""
    from jobledger.daemons.client.submit import jobs_stream
    try:
        stream = jobs_stream(sub, opts.queue, opts.spool, pool.user_name())
        common = stream.cluster_attrs
        per_job = "Cmd" not in common or (   # else every job runs the same one
            "TransferExecutable" not in common and "$" in str(sub.get("transfer_executable", "")))
        ads = (dict(common, **proc) for proc in stream.procs()) if per_job else iter([common])
        warn = str(sub.get("skip_filechecks", "")).strip().lower() == "warn"
        seen = set()
        for ad in ads:
            key = (ad.get("Cmd"), ad.get("TransferExecutable"))
            if key not in seen:
                seen.add(key)
                _check_executable(ad, sub, warn, opts.allow_crlf_script)
    except SubmitError as exc:
        raise Failed(f"\nERROR: {_submit_error(exc, opts.file or '(stdin)')}") from None


def _check_executable(ad: dict, sub, warn: bool, allow_crlf: bool) -> None:
    from jobledger.eventcore.classad.api import unquote
    if "Cmd" not in ad or ad.get("TransferExecutable", "true").lower() == "false":
        return
    if ad.get("JobUniverse") == "13":       # vm: the executable is the VM's name
        return
    grid = unquote(ad["GridResource"]).split() if ad.get("GridResource", "").startswith('"') else []
    if ad.get("JobUniverse") == "9" and grid and grid[0].lower() in NOT_TRANSFERRED_GRIDS:
        return
    path = unquote(ad["Cmd"])
    written = str(sub.get("executable", ""))
    shown = written if written and "$" not in written else path
    if "$$" in shown:
        return
    problem = None
    try:
        size = os.stat(path).st_size
    except OSError as exc:
        problem = f"Can't access executable file {shown}: {exc.strerror}"
    else:
        if size == 0:
            problem = (f"Executable file {shown}  has zero length" if warn
                       else f"Executable file {shown} has zero length")
        elif _crlf_shebang(path):
            lead = "WARNING" if allow_crlf or warn else "ERROR"
            message = f"\n{lead}: Executable file {shown} is a script with CRLF (DOS/Windows) line endings."
            if lead == "WARNING":
                print(message, file=sys.stderr)
                return
            raise Failed(message + f"\nThis generally doesn't work, and you should probably run "
                                   f"'dos2unix {shown}' -- or a similar tool -- before you resubmit.")
    if problem is None:
        return
    if warn:
        print(f"\nWARNING: {problem}", file=sys.stderr)
        return
    raise Failed(f"\nERROR: {problem}")


def _crlf_shebang(path: str) -> bool:
    """A script whose first line (``#!...``) ends in CRLF."""
    try:
        with open(path, "rb") as handle:
            first = handle.readline(8192)
    except OSError:
        return False
    return first.startswith(b"#!") and len(first) > 3 and first.endswith(b"\r\n")


main = entry(PROG, run, USAGE)
