"""jobledger: an event-sourced, HTCondor-compatible job engine.

``import jobledger as htcondor`` stands in for ``import htcondor2 as htcondor``.
This module only re-exports; the code lives in eventcore/, daemons/ and
tracking/ (installed as jobledger.eventcore, jobledger.daemons, jobledger.tracking).
tests/test_exports.py pins the public names.

The names load on first use (PEP 562): every daemon runs as ``python -m
jobledger.daemons.NAME``, which imports this package first, and a daemon needs
none of the client library.
"""

import importlib as _importlib

from jobledger import classad

# module -> the names re-exported from it
_REEXPORTS = {
    "jobledger.eventcore.errors": (
        "HTCondorException", "JobledgerError", "HTCondorEnumError", "HTCondorInternalError",
        "HTCondorIOError", "HTCondorLocateError", "HTCondorReplyError", "HTCondorTypeError",
        "HTCondorValueError",
    ),
    "jobledger.eventcore.events": ("CommonFilesEventType", "FileTransferEventType"),
    "jobledger.tracking.jobevent": ("JobEvent", "JobEventType"),
    "jobledger.tracking.jobeventlog": ("JobEventLog",),
    "jobledger.daemons.client.api": (
        "Collector", "Schedd", "SubmitResult", "platform", "send_command", "version", "Transaction",
    ),
    "jobledger.daemons.config_files": ("param", "reload_config"),
    "jobledger.daemons.remote_param": ("RemoteParam", "_Param"),
    "jobledger.daemons.query_streams": ("BlockingMode", "BulkQueryIterator", "HistoryIterator", "QueryIterator",
                                        "poll"),
    "jobledger.daemons.client.negotiator": ("Negotiator",),
    "jobledger.daemons.client.master": ("send_alive", "set_ready_state"),
    "jobledger.daemons.secman": ("ping", "SecurityContext"),
    "jobledger.daemons.client.startd": ("Startd",),
    "jobledger.daemons.client.credd": ("Credd", "CredCheck", "CredType", "CredTypes"),
    "jobledger.daemons.dagman.control": ("DAGMan",),
    "jobledger.daemons.client.debuglog": ("disable_debug", "enable_debug", "enable_log", "log", "set_subsystem"),
    "jobledger.daemons.client.submit": ("Submit",),
    "jobledger.eventcore.enums": (
        "AdType", "AdTypes", "CompletionType", "DaemonCommand", "DaemonCommands", "DaemonType",
        "DaemonTypes", "DrainType", "DrainTypes", "JobAction", "LogLevel", "QueryOpt", "QueryOpts",
        "SubmitMethod", "SubsystemType", "TransactionFlag", "TransactionFlags", "VacateType", "HistorySrc",
    ),
    "jobledger.eventcore.enums_v1": ("VacateTypes",),
    "jobledger.eventcore.submit.description": ("QueueItemsIterator",),
    "jobledger.eventcore.status": ("JobStatus",),
}
_ORIGIN = {name: module for module, names in _REEXPORTS.items() for name in names}

__version__ = "0.1.0"

__all__ = [
    # pool
    "RemoteParam",
    "Collector", "Schedd", "SubmitResult", "DAGMan", "Negotiator", "Startd", "Credd", "CredCheck", "CredType", "CredTypes", "platform", "send_command", "version", "param", "reload_config",
    "disable_debug", "enable_debug", "enable_log", "log", "set_subsystem", "ping", "SecurityContext",
    "send_alive", "set_ready_state",
    "AdType", "AdTypes", "CompletionType", "DaemonCommand", "DaemonCommands", "DaemonType",
    "DaemonTypes", "DrainType", "DrainTypes", "JobAction", "LogLevel", "QueryOpt", "QueryOpts",
    "SubmitMethod", "SubsystemType", "TransactionFlag", "TransactionFlags", "VacateType", "JobStatus",
    "HTCondorEnumError", "HTCondorInternalError", "HTCondorIOError", "HTCondorLocateError",
    "HTCondorReplyError", "HTCondorTypeError", "HTCondorValueError", "classad",
    "HTCondorException",
    "Submit",
    "CommonFilesEventType",
    "FileTransferEventType",
    "JobEvent",
    "JobEventLog",
    "JobEventType",
    "JobledgerError",
    # v1's streaming queries (removed in htcondor2; the seed reference has them)
    "BlockingMode", "BulkQueryIterator", "HistoryIterator", "QueryIterator", "poll",
    # v1's names in the seed reference that htcondor2 dropped
    "Transaction", "VacateTypes", "QueueItemsIterator",
    "HistorySrc",
    "__version__",
]


def __getattr__(name):
    module = _ORIGIN.get(name)
    if module is None:
        raise AttributeError(f"module 'jobledger' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_ORIGIN))
