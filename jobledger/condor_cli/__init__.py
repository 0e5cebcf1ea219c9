"""HTCondor's command names (condor_submit, condor_q, ...) as fronts on jobledger.

Each command is a console script of the package (pyproject ``[project.scripts]``)
that takes HTCondor's single-dash flags, finds the pool through ``CONDOR_CONFIG``
(``daemons.config_files.param``), calls the same client code the ``jobledger``
CLI and the Python API use (``daemons.client.api``), and prints what HTCondor's
tool prints where scripts parse it.  Modules, one per command family:

    args.py      the argument scanner every command shares, usage errors, ``entry``
    pool.py      the pool a command talks to (schedd, collector) and job-id parsing
    adprint.py   -af / -format / -long / -json / -xml printing of ads
    submit.py    condor_submit
    queue.py     condor_q, condor_history
    act.py       condor_rm, condor_hold, condor_release, condor_qedit, condor_reschedule
    status.py    condor_status
    config.py    condor_config_val, condor_version
    wait.py      condor_wait, condor_userlog, condor_tail, condor_watch_q
    daemon.py    condor_off, condor_on, condor_restart
"""
