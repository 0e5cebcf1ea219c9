"""condor_history: jobs that left the queue, newest first.

Takes condor_q's restrictions (ids, owners, ``-constraint``) and output
options (``-af``, ``-format``, ``-long``, ``-json``, ``-xml``,
``-attributes``), plus ``-limit``/``-match`` N and ``-since`` (a job id or an
expression: stop at the first job it names or matches), and ``-epochs``: a record
per run attempt instead (HTCondor's epoch history).  As HTCondor's reads
its history file without a schedd, a stopped pool's history is read from its
journal.
"""

from __future__ import annotations

import sys

from jobledger.condor_cli import pool, table
from jobledger.condor_cli.adprint import Output
from jobledger.condor_cli.args import Args, Failed, Help, Usage, entry

PROG = "condor_history"

USAGE = f"""\
Usage: {PROG} [options]
    where [options] are
\t-help\t\t\tThis message
\t-name <schedd>\t\tThe schedd whose history to read
\t-constraint <expr>\tJobs matching <expr>
\t-limit <num>\t\tAt most <num> jobs (also -match)
\t-since <jobid>|<expr>\tStop at this job, or at the first job matching <expr>
\t-long\t\t\tWhole job ClassAds
\t-xml\t\t\tWhole job ClassAds as XML
\t-json\t\t\tWhole job ClassAds as JSON
\t-attributes X,Y,...\tOnly these attributes with -long, -xml, -json
\t-format <fmt> <attr>\tPrint <attr> with printf format <fmt>
\t-af[:jlhVr,tng] <attr> [<attr2> ...]\tPrint the attributes in a default format
\t<cluster> | <cluster>.<proc> | <owner>\tThese jobs only
"""

HISTORY_DEFAULT = [
    table.Column(" ID", -12, lambda ad: f"{ad.get('ClusterId')}.{ad.get('ProcId')}"),
    table.Column("OWNER", -14, table.owner),
    table.Column("  SUBMITTED", 11, lambda ad: table.qdate(ad.get("QDate"))),
    table.Column("  RUN_TIME", 12, lambda ad: table.duration(ad.get("RemoteWallClockTime", 0))),
    table.Column("ST", -2, lambda ad: table.status_letter(ad.get("JobStatus"))),
    table.Column("  COMPLETED", 11, lambda ad: table.qdate(ad.get("CompletionDate"))
                 if ad.get("CompletionDate") else "???"),
    table.Column("CMD", 0, table.job_description),
]


def run(argv: list[str]) -> int:
    args = Args(argv, PROG)
    picks: list[str] = []
    constraints: list[str] = []
    limit = -1
    since = None
    output = Output(PROG)
    name = pool_name = None
    history_file = None
    epochs = False
    for arg in args:
        if not args.is_flag():
            parsed = pool.parse_proc_id(arg)
            if parsed is None and arg[:1].isdigit():
                raise Usage(f"Error: Argument ({arg}) must be a jobid or user", show_usage=False)
            picks.append(pool.id_clause(*parsed) if parsed else pool.owner_clause(arg))
        elif args.flag("constraint", 2):
            constraints.append(args.constraint())
        elif args.flag("limit", 3) or args.flag("match", 1):
            limit = args.int_value()
        elif args.flag("since", 3):
            since = args.value()
        elif args.flag("epochs", 2):
            epochs = True
        elif output.take(args):
            pass
        elif args.flag("name", 1):
            name = args.value()
        elif args.flag("pool", 1):
            pool_name = args.value()
        elif args.flag("file", 1):
            history_file = args.value()
        elif args.flag("forwards", 3) or args.flag("backwards", 3) or args.flag("wide", 1):
            pass
        elif args.flag("help", 1):
            raise Help()
        else:
            raise Usage(f"Error: unrecognized argument {arg}")
    constraint = pool.join_all([pool.join_any(picks), *constraints])
    projection = output.projection(table.ATTRS_DEFAULT)
    stopped = pool.stopped_pool() if name is None and history_file is None and pool_name is None else None
    if history_file is not None:
        ads = from_file(history_file, constraint, limit, _since(since))
    elif stopped is not None:       # HTCondor's condor_history reads the file, no daemon needed
        from jobledger.cli.readers import JournalReader
        reader = JournalReader(stopped)
        ads = (reader.epochs if epochs else reader.history)(constraint, projection, limit, _since(since))
    else:
        schedd = pool.schedd(name, pool_name)
        ads = (schedd.jobEpochHistory if epochs else schedd.history)(constraint, projection, limit,
                                                                     _since(since))
    out = sys.stdout
    if not output.write(out, ads):
        out.write(table.heading_line(HISTORY_DEFAULT))
        out.write("".join(table.row_line(HISTORY_DEFAULT, ad, 80) for ad in ads))
    return 0


def from_file(path: str, constraint: str | None, limit: int, since) -> list:
    """The job ads of an HTCondor history file (ads in the long form, each followed by a
    ``***`` banner line), newest first, as the schedd's history query filters them."""
    from jobledger.eventcore.classad import ExprTree
    from jobledger.eventcore.classad.formats import parse_old_ads
    from jobledger.daemons.input_files import read_text
    from jobledger.eventcore.errors import SubmitError
    try:
        text = read_text(path)
    except OSError as exc:
        raise Failed(f"Error: cannot read history file {path}: {exc.strerror or exc}") from None
    except SubmitError as exc:      # a NUL, a byte that is not UTF-8, an endless line
        raise Failed(f"Error: {path} is not a history file of job ClassAds: {exc}") from None
    chunks, current = [], []
    for line in text.splitlines():
        if line.startswith("***"):
            chunks.append("\n".join(current))
            current = []
        else:
            current.append(line)
    if any(line.strip() for line in current):
        chunks.append("\n".join(current))
    test = ExprTree(constraint) if constraint else None
    stop = since if isinstance(since, ExprTree) else None
    out = []
    for chunk in reversed(chunks):
        try:
            ad = next((ad for ad, _ in parse_old_ads(chunk + "\n")), None)
        except ValueError:
            raise Failed(f"Error: {path} is not a history file of job ClassAds") from None
        if ad is None:
            continue
        if isinstance(since, str) and f"{ad.get('ClusterId')}.{ad.get('ProcId')}" == since:
            break
        if stop is not None and stop.eval(ad) is True:
            break
        if test is None or test.eval(ad) is True:
            out.append(ad)
            if 0 <= limit <= len(out):
                break
    return out


def _since(text: str | None):
    """-since: a job id (``C`` or ``C.P``) or a ClassAd expression."""
    if text is None:
        return None
    parsed = pool.parse_proc_id(text)
    if parsed is not None:
        return f"{parsed[0]}.{parsed[1] or 0}"
    from jobledger.eventcore.classad import ExprTree
    try:
        return ExprTree(text)
    except ValueError:
        raise Usage(f"Error: -since {text} is neither a job id nor an expression", show_usage=False) from None


main = entry(PROG, run, USAGE)
