"""One error tree for the whole project.

Every error we raise on purpose is a ``JobledgerError``.  Each one also
subclasses the built-in exception that HTCondor's bindings raise in the same
situation, so a script written for ``htcondor2``/``classad2`` that catches
``ValueError`` or ``classad.ClassAdException`` keeps working.  Errors carry
data (where, what), not just a message.

    JobledgerError
    ├── ClassAdError                 classad2.ClassAdException's twin
    │   ├── ClassAdParseError        text that is not ClassAd; offset/line/column + caret
    │   │   └── ClassAdValueError (ValueError)  where classad2 says ValueError: unquote, ad streams
    │   └── ClassAdEvalError         evaluation *failed* (not the ERROR value)
    ├── SubmitError (ValueError)     submit description; file/line/text
    │   └── MacroError (KeyError)    a macro function that fails ($CHOICE index, $INT of text)
    ├── DagError (ValueError)        a DAG input file (or rescue DAG); file/line
    ├── UserLogError                 a user log that cannot be read; file/offset
    │   ├── UserLogReadError (HTCondorException)   a garbled event (ULOG_RD_ERROR)
    │   └── UserLogFileChanged       the file was truncated or replaced under the reader
    ├── InvalidTransition (ValueError)   (status, event) not in the status table
    │   └── StaleDecision            a decision's assumed job state is not the job's at commit
    ├── JournalError
    │   ├── JournalCorrupt           checksum/continuity failure; position
    │   │   └── JournalBehind        the journal ends before its recorded high-water mark
    │   └── PositionConflict         expected-position check failed on append
    ├── ConfigError (ValueError)     pool configuration; file/line
    ├── UnsafePathError (PermissionError)  a path another user could have planted; path/why
    ├── DAGsException                htcondor.dags' errors: building, writing, rescuing DAGs
    │   ├── DuplicateNodeName, OneToOneEdgeNeedsSameNumberOfVars, IncompatibleGrouper,
    │   │   UnrecognizedWalkOrder, LayerNameContainsSeparator, CannotInvertFormat,
    │   │   InvalidDAG (all ValueError)       the caller's DAG; names the node/layer
    │   ├── DAGFileError (ValueError)     a rescue or node status file; file/line
    │   └── NoRescueFileFound (FileNotFoundError)
    ├── TransferError                a job's files cannot be transferred; hold code, subcode (errno)
    ├── TrackerError                 a job tracker cannot follow its source
    │   └── TrackerTimeout (TimeoutError)  wait_until's condition did not hold in time
    └── HTCondorException            htcondor2.HTCondorException's twin (daemons, IPC)
        ├── HTCondorEnumError (ValueError, NotImplementedError)                 v1 names:
        ├── HTCondorInternalError (RuntimeError, TypeError, ValueError)         old code that
        │   └── SubmitInternalError (SubmitError)  v1: a description that made no job ad
        ├── HTCondorIOError (IOError, RuntimeError, ValueError)                 catches these
        ├── HTCondorLocateError (IOError, ValueError, RuntimeError)             (or the built-ins
        ├── HTCondorReplyError (RuntimeError, ValueError)                       they inherit)
        ├── HTCondorValueError (ValueError, RuntimeError)                       keeps working
        ├── HTCondorTypeError (TypeError, RuntimeError, ValueError)
        ├── TokenError (ValueError)        an IDTOKEN or signing key that cannot be used; where, why
        ├── AuthenticationFailed (IOError) a network peer not authenticated; identity, method, reason
        └── PermissionDenied             an authenticated identity refused a command;
                                           identity, command, permission (the level it lacks)

Whose fault: ``*ParseError``, ``SubmitError``, ``ConfigError`` and
``InvalidTransition`` are the caller's input; ``JournalCorrupt`` and
``UserLogError`` are the data on disk; ``HTCondorException`` is the pool.
"""

from __future__ import annotations


class JobledgerError(Exception):
    """Root of every error jobledger raises on purpose."""


def caret_excerpt(text: str, line: int, column: int) -> str:
    """The source line ``line`` (1-based) with a caret under ``column`` (1-based)."""
    lines = text.splitlines() or [""]
    source = lines[line - 1] if 0 < line <= len(lines) else ""
    return f"{source}\n{' ' * max(column - 1, 0)}^"


def line_col(text: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of a 0-based character offset in ``text``."""
    offset = max(0, min(offset, len(text)))
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, column


class ClassAdError(JobledgerError):
    """A ClassAd could not be parsed or evaluated (``classad2.ClassAdException``)."""


class ClassAdParseError(ClassAdError):
    """Text that is not valid ClassAd; knows where and prints a caret there."""

    def __init__(self, message: str, text: str = "", offset: int = 0, source: str = "<string>"):
        self.message = message
        self.text = text
        self.offset = offset
        self.source = source
        self.line, self.column = line_col(text, offset)
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f"{self.source}:{self.line}:{self.column}"
        return f"{where}: {self.message}\n{caret_excerpt(self.text, self.line, self.column)}"

    def __reduce__(self):
        return (type(self), (self.message, self.text, self.offset, self.source))


class ClassAdValueError(ClassAdParseError, ValueError):
    """Text classad2 rejects with ValueError: not exactly one string literal
    (``unquote``), or a stream of ads that cannot be read on (``parseAds``)."""


class ClassAdEvalError(ClassAdError):
    """Evaluation failed outright (classad2 raises here; not the ERROR value)."""


class SubmitError(JobledgerError, ValueError):
    """A submit description that cannot be turned into jobs."""

    def __init__(self, message: str, line: int | None = None, text: str | None = None,
                 source: str = "<submit>"):
        self.message = message
        self.line = line
        self.text = text
        self.source = source
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.line is None:
            return self.message
        shown = f": {self.text!r}" if self.text is not None else ""
        return f"{self.source}:{self.line}: {self.message}{shown}"

    def __reduce__(self):
        return (type(self), (self.message, self.line, self.text, self.source))


class MacroError(SubmitError, KeyError):
    """A submit macro function that cannot be evaluated (``$CHOICE()`` out of
    range, ``$INT()`` of text, a circular reference).  A ``KeyError`` too,
    because ``htcondor2.Submit.expand`` raises KeyError there."""

    def __str__(self) -> str:
        return SubmitError.__str__(self)


class DagError(JobledgerError, ValueError):
    """A DAG input file DAGMan cannot run: a bad command, an unknown node, a cycle.

    ``source`` and ``line`` name the place (the file the command is in, even
    when it came through INCLUDE or SPLICE)."""

    def __init__(self, message: str, source: str = "<dag>", line: int | None = None):
        self.message = message
        self.source = source
        self.line = line
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.source if self.line is None else f"{self.source}:{self.line}"
        return f"{where}: {self.message}"

    def __reduce__(self):
        return (type(self), (self.message, self.source, self.line))


class UserLogError(JobledgerError):
    """A user log (or global event log) that cannot be read as such."""

    def __init__(self, message: str, path: str | None = None, offset: int | None = None):
        self.message = message
        self.path = path
        self.offset = offset
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.path or "<log>"
        if self.offset is not None:
            where += f" at byte {self.offset}"
        return f"{where}: {self.message}"

    def __reduce__(self):
        return (type(self), (self.message, self.path, self.offset))


class InvalidTransition(JobledgerError, ValueError):
    """An event that the job status table does not allow in the job's state."""

    def __init__(self, status, event, job=None):
        self.status = status
        self.event = event
        self.job = job
        who = f"job {job}: " if job is not None else ""
        super().__init__(f"{who}event {event!s} is not allowed in status {status!s}")

    def __reduce__(self):
        return (type(self), (self.status, self.event, self.job))


class StaleDecision(InvalidTransition):
    """An append's decision assumed a job state (``eventcore.records.Assumed``) the job
    is no longer in: nothing of the append was committed; read the job, decide again."""

    def __init__(self, job, assumed, actual):
        self.job = job
        self.assumed = assumed
        self.actual = actual
        self.status, self.event = actual, None
        JobledgerError.__init__(self, f"job {job}: decided on {assumed}, found {actual}")

    def __reduce__(self):
        return (type(self), (self.job, self.assumed, self.actual))


class JournalError(JobledgerError):
    """The journal refused or could not complete an operation."""


class JournalCorrupt(JournalError):
    """A journal record failed its checksum or broke position continuity."""

    def __init__(self, message: str, position: int | None = None, path: str | None = None):
        self.message = message
        self.position = position
        self.path = path
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.path or "<journal>"
        if self.position is not None:
            where += f" position {self.position}"
        return f"{where}: {self.message}"

    def __reduce__(self):
        return (type(self), (self.message, self.position, self.path))


class JournalBehind(JournalCorrupt):
    """The journal holds less than its evidence says was committed (it went back in time)."""


class PositionConflict(JournalError):
    """An append expected the journal to end at one position; it ends at another."""

    def __init__(self, expected: int, actual: int):
        self.expected = expected
        self.actual = actual
        super().__init__(f"expected journal head {expected}, found {actual}")

    def __reduce__(self):
        return (type(self), (self.expected, self.actual))


class _FileLineError(JobledgerError):
    """An error in a file, at a line when known: ``path:line: message``."""

    unnamed_file = "<file>"

    def __init__(self, message: str, path: str | None = None, line: int | None = None):
        self.message = message
        self.path = path
        self.line = line
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.path or self.unnamed_file
        if self.line is not None:
            where += f":{self.line}"
        return f"{where}: {self.message}"

    def __reduce__(self):
        return (type(self), (self.message, self.path, self.line))


class ConfigError(_FileLineError, ValueError):
    """A configuration file line that cannot be read."""

    unnamed_file = "<config>"


class UnsafePathError(JobledgerError, PermissionError):
    """A file or directory the pool refuses to use because another user could
    have planted it: a symlink or file they own in a directory others can write,
    a LOCAL_DIR not owned by the pool's owner or writable by others."""

    def __init__(self, path: str, why: str):
        self.path = path
        self.why = why
        super().__init__(str(self))

    def __str__(self) -> str:
        return f"{self.path}: {self.why}"

    def __reduce__(self):
        return (type(self), (self.path, self.why))


class DAGsException(JobledgerError):
    """A DAG that cannot be built, written or rescued (``htcondor.dags.exceptions``)."""


class DuplicateNodeName(DAGsException, ValueError):
    """A second node with a name the DAG already has."""


class OneToOneEdgeNeedsSameNumberOfVars(DAGsException, ValueError):
    """A OneToOne edge between layers of different sizes."""


class IncompatibleGrouper(DAGsException, ValueError):
    """A Grouper edge whose chunk sizes do not divide its layers into the same number of chunks."""


class UnrecognizedWalkOrder(DAGsException, ValueError):
    """A walk order that is neither depth-first nor breadth-first."""


class LayerNameContainsSeparator(DAGsException, ValueError):
    """A layer name that holds the node name formatter's separator."""


class CannotInvertFormat(DAGsException, ValueError):
    """A node name the formatter cannot turn back into (layer, index)."""


class InvalidDAG(DAGsException, ValueError):
    """A DAG that DAGMan would reject: a bad name, a cycle, an edge to the FINAL node."""


class NoRescueFileFound(DAGsException, FileNotFoundError):
    """No ``<dag file>.rescueNNN`` in the DAG directory."""


class DAGFileError(_FileLineError, DAGsException, ValueError):
    """A rescue file or node status file that cannot be read; names the file and line."""

    unnamed_file = "<dag file>"


class TransferError(JobledgerError):
    """A job's input or output cannot be transferred: the job is held with
    ``code`` (12 output, 13 input, 34 resources), ``subcode`` (an errno) and ``message``."""

    def __init__(self, code: int, subcode: int, message: str):
        super().__init__(message)
        self.code = code
        self.subcode = subcode
        self.message = message


class TrackerError(JobledgerError):
    """A job tracker cannot follow its source (a log, the journal, a schedd)."""

    def __init__(self, message: str, source: str | None = None):
        self.message = message
        self.source = source
        super().__init__(f"{source}: {message}" if source else message)

    def __reduce__(self):
        return (type(self), (self.message, self.source))


class TrackerTimeout(TrackerError, TimeoutError):
    """``wait_until`` gave up: the condition did not hold within ``timeout`` seconds."""

    def __init__(self, timeout: float | None, jobs: int = 0):
        self.timeout = timeout
        self.jobs = jobs
        TrackerError.__init__(self, f"condition not met within {timeout} s ({jobs} jobs tracked)")

    def __reduce__(self):
        return (type(self), (self.timeout, self.jobs))


class HTCondorException(JobledgerError):
    """The pool failed a request (htcondor2.HTCondorException's twin)."""


class UserLogReadError(UserLogError, HTCondorException):
    """An event that cannot be read (htcondor2 raises ``HTCondorException("ULOG_RD_ERROR")``).

    The reader has already moved past the bad record; reading again continues.
    """


class UserLogFileChanged(UserLogError):
    """The log was truncated, or the path now names another file (rotated/replaced)."""


class UserLogWarning(UserWarning):
    """A user-log problem a reader skipped over (garbled event, foreign text)."""


# The v1 htcondor module's exception classes, kept for old scripts.
class HTCondorEnumError(HTCondorException, ValueError, NotImplementedError):
    """v1: an unknown enumeration value."""


class HTCondorInternalError(HTCondorException, RuntimeError, TypeError, ValueError):
    """v1: an internal failure."""


class SubmitInternalError(HTCondorInternalError, SubmitError):
    """v1: a submit description that made no job ad.  v1's bindings raised
    HTCondorInternalError ("Failed to create job ad, errmsg=..."; htcondor2 raises its
    HTCondorException with the same text); it is still the SubmitError it is."""


class HTCondorIOError(HTCondorException, IOError, RuntimeError, ValueError):
    """v1: a daemon could not be reached or failed to answer."""


class HTCondorLocateError(HTCondorException, IOError, ValueError, RuntimeError):
    """v1: a daemon could not be located."""


class HTCondorReplyError(HTCondorException, RuntimeError, ValueError):
    """v1: a daemon refused the request."""


class HTCondorValueError(HTCondorException, ValueError, RuntimeError):
    """v1: a bad value."""


class HTCondorTypeError(HTCondorException, TypeError, RuntimeError, ValueError):
    """v1: an argument of the wrong type."""


class TokenError(HTCondorException, ValueError):
    """An IDTOKEN, token file or signing key that cannot be used: ``where`` names the
    file (or ``<token>``), the message says why."""

    def __init__(self, message: str, where: str | None = None):
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)


class AuthenticationFailed(HTCondorIOError):
    """A connection whose peer could not be authenticated (no token for the pool's
    trust domain, a token signed by another key, expired, revoked, a server whose
    certificate is not the one trusted).  ``identity`` is who the client claimed to be
    (None before a token was chosen), ``method`` the method tried."""

    def __init__(self, message: str, identity: str | None = None, method: str = "IDTOKENS"):
        self.identity = identity
        self.method = method
        super().__init__(message)


class PermissionDenied(HTCondorReplyError):
    """An authenticated identity asked for a command it may not run: ``identity``,
    ``command`` and ``permission`` (the authorization level, e.g. WRITE, it lacks,
    or OWNER for another user's jobs)."""

    def __init__(self, identity: str, command: str, permission: str, why: str = ""):
        self.identity = identity
        self.command = command
        self.permission = permission
        text = f"{identity} is not authorized for {command}: it needs {permission} permission"
        super().__init__(text + (f" ({why})" if why else ""))
