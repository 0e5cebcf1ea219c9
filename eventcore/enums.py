"""The htcondor2 enumerations of the pool API, with HTCondor's values.

``JobStatus`` lives in ``eventcore/status.py`` and ``JobEventType`` in
``eventcore/events.py``; everything else a script names through
``htcondor.<Enum>.<Member>`` is here.  Values are the wire values of
HTCondor 25.x (checked against the htcondor2 wheel by tests/pool/test_enums.py).
"""

from __future__ import annotations

import enum


class JobAction(enum.IntEnum):
    """What ``Schedd.act`` does to the jobs it selects."""

    Hold = 1
    Release = 2
    Remove = 3
    RemoveX = 4
    Vacate = 5
    VacateFast = 6
    Suspend = 8
    Continue = 9


class QueryOpt(enum.IntFlag):
    """Flags of ``Schedd.query``."""

    Default = 0
    AutoCluster = 1
    GroupBy = 2
    DefaultMyJobsOnly = 4
    SummaryOnly = 8
    IncludeClusterAd = 0x10
    IncludeJobsetAds = 0x20


class TransactionFlag(enum.IntFlag):
    """Flags of ``Schedd.edit``."""

    Default = 0
    NonDurable = 1
    SetDirty = 4
    ShouldLog = 8


_MYTYPE_OF: dict[str, str] = {
    "Startd": "Machine", "Schedd": "Scheduler", "Master": "DaemonMaster",
    "StartdPrivate": "MachinePrivate", "Submitter": "Submitter", "Collector": "Collector",
    "License": "License", "Any": "Any", "Negotiator": "Negotiator", "HAD": "HAD",
    "Generic": "Generic", "Credd": "CredD", "Grid": "Grid", "Placementd": "PlacementD",
    "Accounting": "Accounting", "Slot": "Machine", "StartDaemon": "StartD",
}


class AdType(enum.IntEnum):
    """Kinds of ads the collector keeps (``Collector.query``)."""

    Startd = 0
    Schedd = 1
    Master = 2
    StartdPrivate = 5
    Submitter = 6
    Collector = 7
    License = 8
    Any = 10
    Negotiator = 13
    HAD = 14
    Generic = 15
    Credd = 16
    Grid = 19
    Placementd = 20
    Defrag = 22
    Accounting = 23
    Slot = 24
    StartDaemon = 25

    @staticmethod
    def from_MyType(my_type: str) -> "AdType | None":
        """The ad type whose ads carry ``MyType == my_type`` (``Machine`` -> ``Slot``)."""
        found = None
        for name, mytype in _MYTYPE_OF.items():
            if mytype == my_type:
                found = AdType[name]  # the later mapping wins, as in htcondor2
        return found

    @property
    def my_type(self) -> str | None:
        """The ``MyType`` of this kind of ad (None for Defrag, which has none)."""
        return _MYTYPE_OF.get(self.name)


class DaemonType(enum.IntEnum):
    """Kinds of daemons ``Collector.locate`` finds."""

    none = 0
    Any = 1
    Master = 2
    Schedd = 3
    Startd = 4
    Collector = 5
    Negotiator = 6
    Credd = 13
    Placementd = 15
    HAD = 17
    Generic = 18


class SubmitMethod(enum.IntEnum):
    """Who submitted a job (``JobSubmitMethod``)."""

    CondorSubmit = 0
    DAGMan = 1
    PythonBindings = 2
    HTCondorJobSubmit = 3
    HTCondorDagSubmit = 4
    HTCondorJobSetSubmit = 5
    UserSet = 100
    MinReserved = 0
    MaxReserved = 100


class DaemonCommand(enum.IntEnum):
    """Commands ``send_command`` delivers to a daemon."""

    DaemonOn = 469
    DaemonOff = 467
    DaemonOffFast = 468
    DaemonOffPeaceful = 469
    DaemonsOn = 483
    DaemonsOff = 454
    DaemonsOffFast = 461
    DaemonsOffPeaceful = 484
    OffFast = 60006
    OffForce = 60042
    OffGraceful = 60005
    OffPeaceful = 60015
    Reconfig = 60004
    Restart = 453
    RestartPeaceful = 485
    SetForceShutdown = 60041
    SetPeacefulShutdown = 60016


class LogLevel(enum.IntEnum):
    """Debug levels of ``htcondor.log``."""

    Always = 0
    Error = 1
    Status = 2
    Job = 4
    Machine = 5
    Config = 6
    Protocol = 7
    Priv = 8
    DaemonCore = 9
    Verbose = 10
    Security = 11
    Network = 14
    Hostname = 22
    Audit = 24
    Terse = 0
    FullDebug = 1024
    SubSecond = 1 << 26
    Timestamp = 1 << 27
    PID = 1 << 28
    NoHeader = 1 << 31


class SubsystemType(enum.IntEnum):
    """Subsystems for configuration lookups (``set_subsystem``)."""

    Master = 1
    Collector = 2
    Negotiator = 3
    Schedd = 4
    Shadow = 5
    Startd = 6
    Starter = 7
    GAHP = 8
    Dagman = 9
    SharedPort = 10
    Daemon = 11
    Tool = 12
    Submit = 13
    Job = 14
    Auto = 15


class DrainType(enum.IntEnum):
    Graceful = 0
    Quick = 10
    Fast = 20


class VacateType(enum.IntEnum):
    Graceful = 0
    Fast = 1


class HistorySrc(enum.IntEnum):
    """Where a history query reads (htcondor2's HistorySrc; condor_history's record sources)."""
    ScheddJob = 0
    StartdJob = 1
    JobEpoch = 2
    Daemon = 3


class CompletionType(enum.IntEnum):
    Nothing = 0
    Resume = 1
    Exit = 2
    Restart = 3
    Reconfig = 4


# v1 plural names, still exported by htcondor2.
QueryOpts = QueryOpt
TransactionFlags = TransactionFlag
AdTypes = AdType
DaemonTypes = DaemonType
DaemonCommands = DaemonCommand
DrainTypes = DrainType
