"""condor_submit_dag: submit a DAG as a DAGMan job (a thin front on ``Submit.from_dag``).

    condor_submit_dag [options] DAGFILE

Writes ``DAGFILE.condor.sub`` and submits it to the pool's schedd, printing
the files DAGMan will write, as HTCondor's condor_submit_dag does; as HTCondor's,
a DAG that does not parse is submitted all the same, and its DAGMan job says
why in DAGFILE.dagman.out and exits 1 (``jobledger dag submit`` refuses it
before submitting, naming file:line).
"""

from __future__ import annotations

from jobledger.condor_cli import pool
from jobledger.condor_cli.args import Args, Failed, Help, Usage, entry
from jobledger.daemons.dagman.submit_dag import exclusion_problem
from jobledger.eventcore.enums import SubmitMethod

PROG = "condor_submit_dag"

USAGE = f"""\
Usage: {PROG} [options] <dag file>
    [options] are
\t-maxjobs <n>\t\tat most n node jobs submitted at once
\t-maxidle <n>\t\tsubmit no more node jobs while n of their procs are idle
\t-maxpre <n>\t\tat most n PRE scripts at once
\t-maxpost <n>\t\tat most n POST scripts at once
\t-f[orce]\t\toverwrite an earlier run's files, rename its rescue DAGs: run every node again
\t-update_submit\t\trewrite <dag file>.condor.sub although an earlier run's files exist
\t-no_submit\t\twrite <dag file>.condor.sub, submit nothing
\t-batch-name <name>\tthe batch name of the DAG's jobs
\t-dorescuefrom <n>\trun from rescue DAG number n
\t-RescueFile <file>\trun from this rescue DAG file
\t-DoRecovery\t\trun in recovery mode (read the nodes log from its start)
\t-load_save <file>\trun from this save point file
\t-autorescue <0|1>\tuse the newest rescue DAG (default 1)
\t-notification <when>\tmail notification of the DAGMan job
\t-SubmitMethod <n>\thow DAGMan submits node jobs (0=condor_submit, 1=directly)
\t-insert_sub_file <file>\tappend this submit file's lines to <dag file>.condor.sub
\t-insert_env <k=v;...>\tset these variables in the DAGMan job's environment
\t-name <name>\t\tsubmit to the schedd of this name
"""

INT_OPTIONS = {"maxjobs": 4, "maxidle": 4, "maxpre": 4, "maxpost": 5, "dorescuefrom": 4, "autorescue": 3}


def parse(argv: list[str]) -> tuple[str, dict, bool, str | None]:
    args = Args(argv, PROG)
    options: dict = {}
    dag_file, no_submit, name = None, False, None
    for arg in args:
        if not args.is_flag():
            if dag_file is not None:
                raise Usage(f"{PROG}: only one DAG file is supported, not {arg!r} too", show_usage=False)
            dag_file = arg
            continue
        for option, least in INT_OPTIONS.items():
            if args.flag(option, least):
                value = args.int_value()
                if value < 0:
                    raise Usage(f"{PROG}: {arg} must not be negative", show_usage=False)
                options[option] = value
                break
        else:
            if args.flag("force", 1):
                options["force"] = True
            elif args.flag("update_submit", 2):
                options["update_submit"] = True
            elif args.flag("no_submit", 2):
                no_submit = True
            elif args.flag("rescuefile", 3):
                options["rescuefile"] = args.value()
            elif args.flag("dorecovery", 5):
                options["dorecov"] = True
            elif args.flag("load_save", 2):
                options["load_save"] = args.value()
            elif args.flag("batch-name", 2):
                options["batch_name"] = args.value()
            elif args.flag("submitmethod", 7):
                options["submitmethod"] = args.int_value()
            elif args.flag("insert_sub_file", 8):
                options["appendfile"] = args.value()
            elif args.flag("insert_env", 8):
                options["addtoenv"] = ";".join(filter(None, [options.get("addtoenv"), args.value()]))
            elif args.flag("notification", 3):
                options["notification"] = args.value()
            elif args.flag("name", 2):
                name = args.value()
            elif args.flag("help", 1):
                raise Help()
            else:
                raise args.unknown()
        problem = exclusion_problem(list(options), flags=True)
        if problem is not None:            # as HTCondor's: said at the flag that clashes
            raise Failed(f"Error: {problem}")
    if dag_file is None:
        raise Usage(f"{PROG}: no DAG file given")
    return dag_file, options, no_submit, name


def run(argv: list[str]) -> int:
    from jobledger.daemons.dagman.submit_dag import CONDOR_SUBMIT_DAG_HINT, DagOutputExists, write_submit_file
    from jobledger.daemons.client.submit import Submit
    dag_file, options, no_submit, name = parse(argv)
    try:                      # a missing DAG file: one line, exit 1, nothing submitted
        sub = Submit(write_submit_file(dag_file, options, strict=False))
        # HTCondor's condor_submit_dag hands <dag>.condor.sub to condor_submit: JobSubmitMethod 0
        sub.setSubmitMethod(int(SubmitMethod.CondorSubmit), True)
    except DagOutputExists as exc:   # an earlier run's files: HTCondor's message, exit 1
        raise Failed(exc.explained(CONDOR_SUBMIT_DAG_HINT)) from None
    print("-" * 71)
    print(f"File for submitting this DAG to HTCondor           : {dag_file}.condor.sub")
    print(f"Log of DAGMan debugging messages                 : {dag_file}.dagman.out")
    print(f"Log of HTCondor library output                     : {dag_file}.lib.out")
    print(f"Log of HTCondor library error messages             : {dag_file}.lib.err")
    print(f"Log of the life of condor_dagman itself          : {dag_file}.dagman.log")
    print()
    if no_submit:
        print("-no_submit given, not submitting DAG to HTCondor.  You can do this with:")
        print(f'"condor_submit {dag_file}.condor.sub"')
    else:
        try:
            result = pool.schedd(name).submit(sub)
        except ValueError as exc:
            raise Failed(f"ERROR: {exc}") from None
        print("Submitting job(s).")
        print(f"1 job(s) submitted to cluster {result.cluster()}.")
    print("-" * 71)
    return 0


main = entry(PROG, run, USAGE)
