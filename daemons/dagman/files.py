"""DAGMan's files: the DAG inputs, rescue DAGs, ``dagman.out``, the lock file, metrics."""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import tempfile
import threading
import time

from jobledger.daemons import input_files
from jobledger.eventcore.dagman.report import RESCUE_RE, rescue_name
from jobledger.eventcore.errors import DagError

MAX_DAG_BYTES = 64 << 20
MAX_SCRIPT_DEBUG = 16 << 20      # of a script's output kept for its SCRIPT DEBUG file, per stream


def read_bytes(path: str) -> bytes:
    """A DAG input file's bytes, by the commands' one bounded reader: a FIFO is refused,
    a file past ``MAX_DAG_BYTES`` (``/dev/zero`` included) is an OSError, not read on."""
    return input_files.read_bytes(path, MAX_DAG_BYTES)


def rescue_numbers(dag_path: str) -> list[int]:
    out = []
    for path in glob.glob(glob.escape(dag_path) + ".rescue[0-9][0-9][0-9]"):
        match = RESCUE_RE.search(path)
        if match:
            out.append(int(match.group(1)))
    return sorted(out)


def newest_rescue(dag_path: str, number: int = 0) -> str | None:
    """The rescue DAG a new run uses: ``number`` if given, else the newest one (AutoRescue)."""
    if number:
        path = rescue_name(dag_path, number)
        if not os.path.exists(path):
            raise DagError(f"rescue DAG {path} (-DoRescueFrom {number}) does not exist", dag_path)
        return path
    numbers = rescue_numbers(dag_path)
    return rescue_name(dag_path, numbers[-1]) if numbers else None


def extract_rescue_num(path: str, dag_path: str) -> int:
    """The number of rescue DAG ``path`` if it is one of ``dag_path``'s (``<dag>.rescueNNN``),
    else 0 (HTCondor's DagmanUtils::ExtractRescueNum)."""
    base = f"{dag_path}.rescue"
    if path.startswith(base) and len(path) > len(base):
        digits = re.match(r"[+-]?\d+", path[len(base):])
        return int(digits.group()) if digits else 0
    return 0


def rename_rescues_after(dag_path: str, number: int, say) -> None:
    """Rename the rescue DAGs newer than ``number`` to ``<name>.old`` (a run from an older
    one makes them stale), as DagmanUtils::RenameRescueDagsAfter does."""
    say(f"Renaming rescue DAGs newer than number {number}")
    for newer in rescue_numbers(dag_path):
        if newer > number:
            path = rescue_name(dag_path, newer)
            say(f"Renaming {path}")
            os.replace(path, path + ".old")


def write_atomic(path: str, text: str) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def write_metrics(path: str, data: dict) -> None:
    write_atomic(path, json.dumps(data, indent=4) + "\n")


class DagmanOut:
    """``<dag>.dagman.out``: condor_dagman's debug log (timestamped lines, appended).  Lines
    gather in a buffer and go out in one write when DAGMan is about to wait (``flush``, each
    round of its loop) or exit: a busy round writes once, not a system call per line.

    ``flags`` is DAGMAN_DEBUG: its header flags shape each line's head as HTCondor's dprintf
    does (empty by default, so the head is the time alone): D_TIMESTAMP the Unix time instead
    of the date, D_SUB_SECOND milliseconds after it, D_PID ``(pid:N)`` after the time, D_CAT
    the line's category (``(D_ALWAYS)``).  ``test`` lines are written only when it names
    D_TEST (or D_ALL), as HTCondor's DAGMan writes its D_TEST checks."""

    def __init__(self, path: str, flags: str = ""):
        self.handle = open(path, "a", encoding="utf-8", buffering=1 << 16)
        self._lock = threading.Lock()       # the control server's thread writes lines too
        names = {name.upper() for name in re.split(r"[\s,|]+", flags or "") if name}
        self._unix = "D_TIMESTAMP" in names
        self._sub_second = "D_SUB_SECOND" in names
        self._pid = f" (pid:{os.getpid()})" if "D_PID" in names or "D_ALL" in names else ""
        self._cat = "D_CAT" in names or "D_CATEGORY" in names or "D_ALL" in names
        self.testing = "D_TEST" in names or "D_ALL" in names
        self._stamp_at: float = -1
        self._stamp = ""

    def __call__(self, message: str, category: str = "D_ALWAYS") -> None:
        now = time.time()
        key = now if self._sub_second else int(now)
        with self._lock:
            if key != self._stamp_at:
                self._stamp_at, self._stamp = key, self._head(now)
            stamp = f"{self._stamp} ({category})" if self._cat else self._stamp
            for line in message.splitlines() or [""]:
                self.handle.write(f"{stamp} {line}\n")

    def test(self, message: str) -> None:
        """A D_TEST line (a check a test reads), when DAGMAN_DEBUG asks for them."""
        if self.testing:
            self(message, "D_TEST")

    def _head(self, now: float) -> str:
        head = str(int(now)) if self._unix else time.strftime("%m/%d/%y %H:%M:%S", time.localtime(now))
        if self._sub_second:
            head += f".{int(now * 1000) % 1000:03d}"
        return head + self._pid

    def flush(self) -> None:
        with self._lock:
            self.handle.flush()

    def close(self) -> None:
        with self._lock:
            self.handle.close()




class ScriptDebug:
    """A script's SCRIPT DEBUG file: its standard output, its standard error or both (``what``:
    STDOUT, STDERR, ALL) are kept while it runs and appended to ``path`` when it ends, in one
    write after HTCondor's banner line (``*** Node=A Type=PRE ExitCode=0 Completion=<time>
    Cmd='...'``), so the blocks of scripts sharing a file never interleave.  Each stream keeps
    at most ``MAX_SCRIPT_DEBUG`` bytes (its first ones)."""

    def __init__(self, path: str, what: str | None, node: str, kind: str, command: str):
        self.path, self.node, self.kind, self.command = path, node, kind, command
        self.kept = {name: tempfile.TemporaryFile() for name in ("STDOUT", "STDERR") if what in (name, "ALL")}
        self.stdout = self.kept["STDOUT"] if "STDOUT" in self.kept else subprocess.DEVNULL
        self.stderr = self.kept["STDERR"] if "STDERR" in self.kept else subprocess.DEVNULL

    def write(self, returncode: int) -> None:
        """Append the block for a script that ended with ``returncode`` (Popen's: negative for
        a signal) and let the kept output go."""
        kind, value = ("ExitCode", returncode) if returncode >= 0 else ("Signal", -returncode)
        block = (f"*** Node={self.node} Type={self.kind} {kind}={value} Completion={int(time.time())} "
                 f"Cmd='{self.command}'\n").encode()
        try:
            for stream in self.kept.values():      # stdout first, as HTCondor's
                stream.seek(0)
                block += stream.read(MAX_SCRIPT_DEBUG)
            with open(self.path, "ab") as handle:
                handle.write(block)
        finally:
            self.discard()

    def discard(self) -> None:
        for stream in self.kept.values():
            stream.close()
