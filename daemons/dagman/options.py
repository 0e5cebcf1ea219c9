"""condor_dagman's command line (as condor_submit_dag writes it into the DAGMan job)."""

from __future__ import annotations

import attrs

from jobledger.eventcore.dagman.run import Throttles

# flag (lower case) -> (field, takes a value)
FLAGS = {"-dag": ("dag", True), "-lockfile": ("lockfile", True), "-maxjobs": ("max_jobs", True),
         "-maxidle": ("max_idle", True), "-maxpre": ("max_pre", True), "-maxpost": ("max_post", True),
         "-maxhold": ("max_hold", True), "-autorescue": ("auto_rescue", True),
         "-dorescuefrom": ("rescue_from", True), "-force": ("force", False), "-dorecov": ("recovery", False),
         "-dorecovery": ("recovery", False), "-batch_name": ("batch_name", True),
         "-load_save": ("load_save", True), "-submitmethod": ("submit_method", True),
         "-rescuefile": ("rescue_file", True)}
IGNORED_WITH_VALUE = {"-p", "-l", "-csdversion", "-debug", "-outfile_dir", "-priority", "-dagman",
                      "-notification"}


@attrs.define
class Options:
    dag: str = ""
    lockfile: str = ""
    max_jobs: int = 0
    max_idle: int = 1000
    max_pre: int = 20
    max_post: int = 20
    max_hold: int = 20
    auto_rescue: int = 1
    rescue_from: int = 0
    force: bool = False
    recovery: bool = False
    batch_name: str = ""
    load_save: str = ""          # a save point file to start from (its DONE nodes are done)
    rescue_file: str = ""        # -RescueFile: the rescue DAG to start from, by name
    submit_method: int = -1      # 1: node jobs submitted directly, 0: through condor_submit;
                                 # -1: as DAGMAN_USE_DIRECT_SUBMIT says (default true)

    @property
    def throttles(self) -> Throttles:
        return Throttles(self.max_jobs, self.max_idle, self.max_pre, self.max_post, self.max_hold)


def parse_options(argv: list[str]) -> Options:
    options = Options()
    index = 0
    while index < len(argv):
        flag = argv[index].lower()
        if flag in FLAGS:
            field, takes = FLAGS[flag]
            if takes:
                if index + 1 >= len(argv):
                    raise ValueError(f"{argv[index]} needs a value")
                kind = type(getattr(options, field))
                setattr(options, field, kind(argv[index + 1]))
                index += 2
            else:
                setattr(options, field, True)
                index += 1
        elif flag in IGNORED_WITH_VALUE:
            index += 2
        else:
            index += 1   # -f, -Suppress_notification, -Verbose, -AllowVersionMismatch, ...
    if not options.dag:
        raise ValueError("no -Dag given")
    if options.auto_rescue == 0 and not options.rescue_from:
        options.force = True
    options.lockfile = options.lockfile or f"{options.dag}.lock"
    return options
