"""DAGMan's files: the DAG inputs, rescue DAGs, ``dagman.out``, the lock file, metrics."""

from __future__ import annotations

import glob
import json
import os
import threading
import time

from jobledger.daemons import input_files
from jobledger.eventcore.dagman.report import RESCUE_RE, rescue_name
from jobledger.eventcore.errors import DagError

MAX_DAG_BYTES = 64 << 20


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
    round of its loop) or exit: a busy round writes once, not a system call per line."""

    def __init__(self, path: str):
        self.handle = open(path, "a", encoding="utf-8", buffering=1 << 16)
        self._lock = threading.Lock()       # the control server's thread writes lines too
        self._stamp_at = -1
        self._stamp = ""

    def __call__(self, message: str) -> None:
        now = int(time.time())
        with self._lock:
            if now != self._stamp_at:
                self._stamp_at, self._stamp = now, time.strftime("%m/%d/%y %H:%M:%S", time.localtime(now))
            stamp = self._stamp
            for line in message.splitlines() or [""]:
                self.handle.write(f"{stamp} {line}\n")

    def flush(self) -> None:
        with self._lock:
            self.handle.flush()

    def close(self) -> None:
        with self._lock:
            self.handle.close()


