"""``Submit``: a submit description as an htcondor2-compatible mapping.

Keys are submit commands (case-insensitive, first spelling kept), values
the raw strings; ``expand()`` gives a value with macros expanded using the
offline placeholders (ClusterId 1, ProcId 0, ...); ``getQArgs``/
``setQArgs``/``itemdata`` speak about the queue statement; ``jobs()``
and ``cluster()`` build the job ads a schedd stores (``jobs.py``).

Pure: every file, variable, clock reading and random number comes from
``self.environment`` (a ``SubmitEnvironment``, made by the class's
``environment_factory`` or given to ``Submit.using(env, ...)``); the
façade's ``Submit`` (``daemons/client/submit.py``) gives it the real ones,
with relative paths read against the current directory at construction.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping

from jobledger.eventcore.errors import SubmitError

from .env import StaticEnvironment
from .macros import Expander, MacroError
from .parse import Parser, QueueLine
from .queue import load_rows, parse_queue

ARCH = "X86_64"
OPSYS = "LINUX"

# Automatic macros as htcondor2 shows them offline (submit.md section 2.3).
OFFLINE_MACROS = {
    "cluster": "1", "clusterid": "1", "process": "0", "procid": "0", "step": "0", "row": "0",
    "itemindex": "0", "jobid": "1.0", "joblistid": "1", "taskid": "0", "arch": ARCH,
    "opsys": OPSYS, "islinux": "1", "iswindows": "0",
}

_NO_DELETE = "Submit object keys can not be removed, but the empty string is defined to have no effect."


def _value_text(value) -> str:
    """A constructor dict value as text (htcondor2's conversions)."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, int, float)):
        return str(value)
    if hasattr(value, "__fspath__"):
        return str(value)
    from jobledger.eventcore.classad import ClassAd
    if isinstance(value, ClassAd):
        return repr(value)
    raise TypeError("value must be a string")


def split_qargs(text: str) -> tuple[str, tuple[str, ...] | None]:
    """Queue arguments as ``setQArgs``/``itemdata(qargs)`` take them: the first line is
    the statement (a leading ``queue`` dropped); when it ends an open ``(``, the
    following lines up to a line ``)`` are the item rows, as in a submit file
    (htcondor2's reading: a blank line among them is an error, text after the
    ``)`` line is ignored).  Returns (arguments, rows or None)."""
    lines = text.split("\n")
    first = lines[0]
    if first[:6].lower() == "queue " or first.lower() == "queue":
        first = first[6:]
    first = first.strip()
    if len(lines) == 1 or not first.endswith("("):
        if len(lines) > 1 and any(line.strip() for line in lines[1:]):
            raise SubmitError("invalid qargs", source="<qargs>")
        return first, None
    block = []
    for line in lines[1:]:
        if line.strip() == ")":
            return first, tuple(block)
        if not line.strip():
            raise SubmitError("invalid qargs", source="<qargs>")
        block.append(line)
    raise SubmitError("Reached end of qargs without finding closing brace ')' for Queue command")


class Submit(MutableMapping):
    """``Submit(input: dict | str | None = None, queue: str = None, **kwargs)``."""

    environment_factory = StaticEnvironment

    def __init__(self, input=None, queue: str | None = None, **kwargs):
        self._init(type(self).environment_factory(), input, queue, kwargs)

    def update(self, *args, **kwargs) -> None:
        """MutableMapping's update; anything but a mapping or pairs is v1's
        ``HTCondorTypeError`` (a ``TypeError``, as htcondor2 raises)."""
        if len(args) > 1:
            raise TypeError(f"update expected at most 1 argument, got {len(args)}")
        if args and not isinstance(args[0], Mapping) and not hasattr(args[0], "keys") \
                and not isinstance(args[0], (list, tuple)) and not hasattr(args[0], "__iter__"):
            from jobledger.eventcore.errors import HTCondorTypeError
            raise HTCondorTypeError("Must provide a dictionary-like object to update()")
        super().update(*args, **kwargs)

    @classmethod
    def using(cls, environment, input=None, queue: str | None = None, **kwargs) -> "Submit":
        """A Submit that reads files, variables and the clock from ``environment``."""
        self = cls.__new__(cls)
        self._init(environment, input, queue, kwargs)
        return self

    def _init(self, environment, input, queue, kwargs) -> None:
        self.environment = environment
        self._macros: dict[str, tuple[str, str]] = {}
        self._lines: dict[str, tuple[int, str]] = {}
        self._queue = QueueLine()
        self._submit_method = 2
        self._unclosed_if: SubmitError | None = None
        if isinstance(input, str):
            self._parse(input)
        elif isinstance(input, dict):
            lines = []
            for key, value in input.items():
                if not isinstance(key, str):
                    raise TypeError("key must be a string")
                if key.strip().lower() == "queue":
                    raise ValueError("the queue statement can not be specified in a dictionary")
                lines.append(f"{key} = {_value_text(value)}")
            self._parse("\n".join(lines) + "\n")
        elif input is not None:
            raise TypeError("input must be a dictionary mapping string to strings, a string, or None")
        self.update(kwargs)
        if queue is not None:
            self.setQArgs(queue)

    def _parse(self, text: str) -> None:
        parser = Parser(self.environment, defaults=OFFLINE_MACROS)
        parser.parse(text)
        self._macros = parser.macros
        self._lines = parser.lines
        if parser.queue is not None:
            self._queue = parser.queue
        self._unclosed_if = parser.unclosed_if

    # -- mapping ------------------------------------------------------------
    def __getitem__(self, key: str) -> str:
        if not isinstance(key, str):
            raise TypeError("key must be a string")
        hit = self._macros.get(key.lower())
        if hit is None:
            raise KeyError(key)
        return hit[1]

    def __setitem__(self, key: str, value: str) -> None:
        if not isinstance(key, str):
            raise TypeError("key must be a string")
        if not isinstance(value, str):
            raise TypeError("value must be a string")
        low = key.lower()
        old = self._macros.get(low)
        self._macros[low] = (old[0] if old else key, value)

    def __delitem__(self, key: str) -> None:
        raise NotImplementedError(_NO_DELETE)

    def __iter__(self) -> Iterator[str]:
        return iter([spelling for spelling, _ in self._macros.values()])

    def __len__(self) -> int:
        return len(self._macros)

    def __contains__(self, key) -> bool:
        return isinstance(key, str) and key.lower() in self._macros

    def __str__(self) -> str:
        lines = [f"{name} = {value}\n" for name, value in self._macros.values()]
        args = self._queue.args
        lines.append(f"queue {args}\n" if args else "queue\n")
        return "".join(lines)

    def __repr__(self) -> str:
        return f"Submit({self})"

    # -- expansion ----------------------------------------------------------
    def lookup(self, name: str) -> str | None:
        """Raw value of a command or automatic macro (offline placeholders)."""
        hit = self._macros.get(name.lower())
        if hit is not None:
            return hit[1]
        return OFFLINE_MACROS.get(name.lower())

    def expand(self, attr: str) -> str:
        """``attr`` fully expanded; KeyError when undefined or empty."""
        if not isinstance(attr, str):
            raise TypeError("attr must be a string")
        raw = self.lookup(attr)
        if raw is None:
            raise KeyError(attr)
        try:
            value = Expander(self.lookup, self.environment, strict=False).expand(raw)
        except MacroError:
            raise KeyError(attr) from None
        if not value:
            raise KeyError(attr)
        return value

    # -- the queue statement -----------------------------------------------
    def getQArgs(self) -> str:
        return self._queue.args

    def setQArgs(self, args: str) -> None:
        if not isinstance(args, str):
            raise TypeError("args must be a string")
        try:
            first, block = split_qargs(args)
        except SubmitError:  # as htcondor2, a broken item list fails when it is read
            first, block = args.split("\n", 1)[0].strip(), None
        self._queue = QueueLine(first, self._queue.number, self._queue.source, block,
                                block is not None)

    def check_complete(self) -> None:
        """condor_submit's checks of the whole text that htcondor2.Submit skips:
        an ``if`` the text never closes."""
        if self._unclosed_if is not None:
            raise self._unclosed_if

    def queue_spec(self, qargs: str | None = None, strict: bool = False):
        """The parsed queue statement (macros in it expanded); ``strict``
        (building jobs, as condor_submit): an item list opened with ``(``
        at the end of the line must be closed."""
        line = self._queue
        if qargs is not None:
            first, block = split_qargs(qargs)
            line = QueueLine(first, 0, "<qargs>", block, block is not None)
        where = (line.number or None, f"queue {line.args}".strip(), line.source)
        try:
            args = Expander(self.lookup, self.environment).expand(line.args)
        except MacroError as exc:
            raise SubmitError(exc.message, *where) from None
        block, closed = line.block, line.block_closed
        if strict and args.endswith("(") and not closed:
            raise SubmitError("invalid Queue statement: no ')' closes the item list", *where)
        return parse_queue(args, block, closed, where), where

    def itemdata(self, qargs: str | None = None) -> "QueueItemsIterator | None":
        """Rows of the queue statement (all of them: slices are ignored), as v1's
        ``QueueItemsIterator`` (an iterator, as htcondor2 returns)."""
        spec, where = self.queue_spec(qargs)
        rows = load_rows(spec, self.environment, where)
        return None if rows is None else QueueItemsIterator(rows)

    # -- job ads ------------------------------------------------------------
    def cluster(self, clusterid: int = 1, count: int = 0, itemdata=None, queue: str | None = None,
                qdate: int | None = None, owner: str = "", spool: bool = False, procid: int = 0,
                max_jobs: int | None = None):
        """The cluster's job ads as a ``ClusterPlan`` (common attributes once,
        per-proc differences), ClassAd expression text throughout; at most
        ``max_jobs`` jobs (``SubmitError`` beyond)."""
        from .jobs import plan_cluster
        return plan_cluster(self, self.environment, cluster_id=clusterid, count=count, itemdata=itemdata,
                            queue=queue, spool=spool, owner=owner, max_jobs=max_jobs,
                            qdate=self.environment.now() if qdate is None else qdate, first_proc=procid)

    def jobs(self, count: int = 0, itemdata=None, clusterid: int = 1, procid: int = 0, qdate: int = 0,
             owner: str = "") -> Iterator:
        """The full job ads (``ClassAd``) a schedd would store, one per proc
        (htcondor v1's simulated ``Submit.jobs``; htcondor2 dropped it)."""
        return self.cluster(clusterid, count, itemdata, None, qdate, owner, False, procid).ads()

    def procs(self, count: int = 0, itemdata=None, clusterid: int = 1, procid: int = 0, qdate: int = 0,
              owner: str = "") -> Iterator:
        """Only what differs per proc, as ClassAds (v1 ``Submit.procs``)."""
        from jobledger.eventcore.classad import ClassAd, ExprTree
        plan = self.cluster(clusterid, count, itemdata, None, qdate, owner, False, procid)
        for proc in plan.proc_attrs:
            ad = ClassAd()
            for name, text in proc.items():
                ad[name] = ExprTree(text)
            yield ad

    # -- submit method -------------------------------------------------------
    def getSubmitMethod(self) -> int:
        return self._submit_method

    def setSubmitMethod(self, method_value: int = -1, allow_reserved_values: bool = False) -> None:
        method_value = int(method_value)
        if 0 <= method_value < 100 and not allow_reserved_values:
            # htcondor2's own words (the upstream test of submit methods compares them)
            raise ValueError("Submit method value must be 100 or greater, or allowed_reserved_values must be True.")
        self._submit_method = method_value

    # -- things that need a pool ---------------------------------------------
    def queue(self, txn, count: int = 0, ad_results=None) -> int:
        """v1: submit inside a schedd transaction (``with schedd.transaction() as txn``)."""
        return int(self.queue_with_itemdata(txn, count or 1))

    def queue_with_itemdata(self, txn, count: int = 1, itemdata=None, spool: bool = False):
        """v1: submit inside a schedd transaction; returns a SubmitResult."""
        submit = getattr(txn, "submit", None)
        if submit is None:
            raise NotImplementedError("Submit.queue_with_itemdata needs a transaction from "
                                      "Schedd.transaction(); use Schedd.submit(sub, count=..., itemdata=...)")
        return submit(self, count=count, itemdata=itemdata, spool=spool)

    @staticmethod
    def from_dag(filename: str, options=None) -> "Submit":
        raise NotImplementedError("Submit.from_dag: DAGMan is not part of jobledger")

    @staticmethod
    def from_dag_options() -> None:
        raise NotImplementedError("Submit.from_dag_options: DAGMan is not part of jobledger")

    def issue_credentials(self):
        return None


class QueueItemsIterator:
    """v1's iterator over the items of a queue statement (``Submit.itemdata``)."""

    def __init__(self, rows) -> None:
        self._rows = iter(rows)

    def __iter__(self) -> "QueueItemsIterator":
        return self

    def __next__(self):
        return next(self._rows)

    def next(self):
        """v1's spelling of ``next(iterator)``."""
        return next(self._rows)
