"""The v1 bindings' enumerations (``import htcondor`` of HTCondor 24.0 and before).

The v1 enums were Boost.Python enums: ints whose ``str`` is the member's name
(``str(DaemonTypes.Schedd) == "Schedd"``, where htcondor2's IntEnum prints "3"), with
``names`` and ``values`` dictionaries.  The members and numbers are the 24.0 wheel's;
they compare equal to the htcondor2 members of the same number, so one implementation
serves both APIs.  ``JobStatus`` is an IntEnum in v1 as well and is shared.
"""

from __future__ import annotations

import enum


class V1Enum(enum.IntEnum):
    """An int whose str is its name, as v1's enums print."""

    def __str__(self) -> str:
        return self.name

    def __format__(self, spec: str) -> str:
        return format(self.name, spec)


def _v1(name: str, members: dict[str, int]) -> type[V1Enum]:
    cls = V1Enum(name, list(members.items()))
    cls.names = {key: cls[key] for key in members}
    cls.values = {}
    for key in members:
        cls.values.setdefault(members[key], cls[key])
    return cls


AdTypes = _v1("AdTypes", {
    "None": -1, "Startd": 0, "Schedd": 1, "Master": 2, "StartdPrivate": 5, "Submitter": 6, "Collector": 7,
    "License": 8, "Any": 10, "Negotiator": 13, "HAD": 14, "Generic": 15, "Credd": 16, "Grid": 19,
    "Defrag": 22, "Accounting": 23, "Slot": 24, "StartDaemon": 25})
DaemonTypes = _v1("DaemonTypes", {
    "None": 0, "Any": 1, "Master": 2, "Schedd": 3, "Startd": 4, "Collector": 5, "Negotiator": 6,
    "Credd": 13, "HAD": 17, "Generic": 18})
JobAction = _v1("JobAction", {
    "Hold": 1, "Release": 2, "Remove": 3, "RemoveX": 4, "Vacate": 5, "VacateFast": 6, "Suspend": 8,
    "Continue": 9})
QueryOpts = _v1("QueryOpts", {
    "Default": 0, "AutoCluster": 1, "GroupBy": 2, "DefaultMyJobsOnly": 4, "SummaryOnly": 8,
    "IncludeClusterAd": 16, "IncludeJobsetAds": 32, "ClusterAds": 80, "JobsetAds": 96})
TransactionFlags = _v1("TransactionFlags", {"None": 0, "NonDurable": 1, "SetDirty": 4, "ShouldLog": 8})
DrainTypes = _v1("DrainTypes", {"Graceful": 0, "Quick": 10, "Fast": 20})
VacateTypes = _v1("VacateTypes", {"Graceful": 1, "Fast": 2})
DaemonCommands = _v1("DaemonCommands", {
    "Restart": 453, "DaemonsOff": 454, "DaemonsOn": 455, "DaemonsOffFast": 461, "DaemonOff": 467,
    "DaemonOffFast": 468, "DaemonOn": 469, "DaemonOffPeaceful": 483, "DaemonsOffPeaceful": 484,
    "RestartPeacful": 485, "OffGraceful": 60005, "OffFast": 60006, "Reconfig": 60012, "OffPeaceful": 60015,
    "SetPeacefulShutdown": 60016, "SetForceShutdown": 60041, "OffForce": 60042})
LogLevel = _v1("LogLevel", {
    "Always": 0, "Terse": 0, "Error": 1, "Status": 2, "Job": 4, "Machine": 5, "Config": 6, "Protocol": 7,
    "Priv": 8, "DaemonCore": 9, "Security": 11, "Network": 14, "Hostname": 22, "Audit": 27, "Verbose": 256,
    "FullDebug": 1024, "SubSecond": 1 << 26, "Timestamp": 1 << 27, "PID": 1 << 28, "NoHeader": -(1 << 31)})
SubsystemType = _v1("SubsystemType", {
    "Master": 1, "Collector": 2, "Negotiator": 3, "Schedd": 4, "Shadow": 5, "Startd": 6, "Starter": 7,
    "GAHP": 8, "Dagman": 9, "SharedPort": 10, "Daemon": 11, "Tool": 12, "Submit": 13, "Job": 14})
FileTransferEventType = _v1("FileTransferEventType", {
    "IN_QUEUED": 1, "IN_STARTED": 2, "IN_FINISHED": 3, "OUT_QUEUED": 4, "OUT_STARTED": 5, "OUT_FINISHED": 6})

# each v1 enum and the htcondor2 enum it stands for
V2_NAMES = {"AdTypes": "AdType", "DaemonTypes": "DaemonType", "JobAction": "JobAction", "QueryOpts": "QueryOpt",
            "TransactionFlags": "TransactionFlag", "DrainTypes": "DrainType", "VacateTypes": "VacateType",
            "DaemonCommands": "DaemonCommand", "LogLevel": "LogLevel", "SubsystemType": "SubsystemType",
            "FileTransferEventType": "FileTransferEventType"}


def as_v2(value, cls: type[enum.Enum]):
    """``value`` as a member of the htcondor2 enum ``cls``: itself, or the v1 member of the
    same name converted (v1 code hands its own enums to the one implementation);
    None when it is neither."""
    if isinstance(value, cls):
        return value
    if isinstance(value, V1Enum) and V2_NAMES.get(type(value).__name__) == cls.__name__:
        # by name: the numbers of some commands changed between the two APIs
        for name, member in cls.__members__.items():
            if name.lower() == value.name.lower():
                return member
    return None
