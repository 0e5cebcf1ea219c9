"""``import jobledger.v1 as htcondor`` stands in for the v1 bindings' ``import htcondor``.

One implementation serves both APIs: this module re-exports jobledger's names and
replaces the few whose v1 meaning differs (checked against the htcondor 24.0 wheel):
the enums print their names (``str(DaemonTypes.Schedd) == "Schedd"``), ``param`` lists
every name with a raw value and answers the raw text of one that expands to nothing,
a termination's ToE tag is its ``ToE`` sub-ad, and ``SecMan`` exists.  ``python -m jobledger.aliases v1`` prints a folder that, put on
PYTHONPATH, makes ``import htcondor`` and ``import classad`` resolve here unchanged.
"""

from jobledger.daemons.client.api import SubmitResult, platform, send_command, version
from jobledger.daemons.client.api_v1 import Collector, Schedd
from jobledger.daemons.client.api import Transaction
from jobledger.daemons.config_files import param_v1 as param
from jobledger.daemons.config_files import ParamV1 as _Param
from jobledger.daemons.remote_param import RemoteParam
from jobledger.eventcore.submit.description import QueueItemsIterator
from jobledger.daemons.config_files import reload_config
from jobledger.daemons.query_streams import BlockingMode, BulkQueryIterator, HistoryIterator, QueryIterator, poll
from jobledger.daemons.client.negotiator import Negotiator
from jobledger.daemons.client.master import send_alive, set_ready_state
from jobledger.daemons.client.startd import Startd
from jobledger.daemons.client.credd import CredCheck, Credd, CredStatus, CredTypes
from jobledger.daemons.client.debuglog import enable_debug, enable_log, log, set_subsystem
from jobledger.daemons.secman import SecMan, Token, TokenRequest
from jobledger.daemons.client.submit import Submit
from jobledger.eventcore.enums_v1 import (AdTypes, DaemonCommands, DaemonTypes, DrainTypes, FileTransferEventType,
                                JobAction, LogLevel, QueryOpts, SubsystemType, TransactionFlags, VacateTypes)
from jobledger.eventcore.errors import (HTCondorEnumError, HTCondorException, HTCondorInternalError, HTCondorIOError,
                              HTCondorLocateError, HTCondorReplyError, HTCondorTypeError, HTCondorValueError)
from jobledger.eventcore.status import JobStatus
from jobledger import dags, personal
from jobledger.v1 import classad
from jobledger.tracking.jobevent import JobEventType
from jobledger.tracking.jobevent import JobEventV1 as JobEvent
from jobledger.tracking.jobeventlog import JobEventLogV1 as JobEventLog

__version__ = "24.0.0"

__all__ = [
    "Collector", "Schedd", "SubmitResult", "Transaction", "Negotiator", "Startd", "Credd", "CredCheck", "CredStatus", "CredTypes", "platform", "send_command", "version", "param",
    "reload_config", "enable_debug", "enable_log", "log", "set_subsystem", "SecMan", "Token", "TokenRequest", "Submit",
    "AdTypes", "DaemonCommands", "DaemonTypes", "DrainTypes", "FileTransferEventType", "JobAction",
    "LogLevel", "QueryOpts", "SubsystemType", "TransactionFlags", "VacateTypes",
    "HTCondorEnumError", "HTCondorException", "HTCondorInternalError", "HTCondorIOError",
    "HTCondorLocateError", "HTCondorReplyError", "HTCondorTypeError", "HTCondorValueError",
    "JobStatus", "classad", "dags", "personal", "JobEvent", "JobEventType", "JobEventLog", "__version__",
    "BlockingMode", "BulkQueryIterator", "HistoryIterator", "QueryIterator", "poll", "RemoteParam",
    "QueueItemsIterator", "_Param", "send_alive", "set_ready_state",
]
