"""jobledger: an event-sourced, HTCondor-compatible job engine.

``import jobledger as htcondor`` stands in for ``import htcondor2 as htcondor``.
This module only re-exports; the code lives in eventcore/, daemons/ and
tracking/.  tests/test_exports.py pins the public names.
"""

from eventcore.errors import HTCondorException, JobledgerError
from eventcore.events import CommonFilesEventType, FileTransferEventType
from tracking.jobevent import JobEvent, JobEventType
from tracking.jobeventlog import JobEventLog
# The pool: daemons' clients, configuration, enums, v1 exception names.
from daemons.clients import Collector, Schedd, SubmitResult, platform, send_command, version
from daemons.config_files import param, reload_config
from daemons.dagman.control import DAGMan
from daemons.debuglog import disable_debug, enable_debug, enable_log, log, set_subsystem
from daemons.submit_env import Submit
from eventcore.enums import (AdType, AdTypes, CompletionType, DaemonCommand, DaemonCommands, DaemonType,
                             DaemonTypes, DrainType, DrainTypes, JobAction, LogLevel, QueryOpt, QueryOpts,
                             SubmitMethod, SubsystemType, TransactionFlag, TransactionFlags, VacateType)
from eventcore.errors import (HTCondorEnumError, HTCondorInternalError, HTCondorIOError,
                              HTCondorLocateError, HTCondorReplyError, HTCondorTypeError,
                              HTCondorValueError)
from eventcore.status import JobStatus
from jobledger import classad

__version__ = "0.1.0"

__all__ = [
    # pool
    "Collector", "Schedd", "SubmitResult", "DAGMan", "platform", "send_command", "version", "param", "reload_config",
    "disable_debug", "enable_debug", "enable_log", "log", "set_subsystem",
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
    "__version__",
]
