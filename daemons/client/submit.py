"""The real world for the submit language: files, environment, clock, randomness.

``eventcore.submit`` is pure; this module gives it the submitting process's
current directory, files, environment variables, wall clock and a random
generator.  ``Submit`` here is the class ``jobledger.Submit`` re-exports;
``build_stream`` is what ``Schedd.submit`` calls to turn a ``Submit`` into
the cluster ad and the proc ads it sends to the schedd as they are made;
``build_cluster`` makes them all at once (v1 transactions, DAGMan).
"""

from __future__ import annotations

import glob
import os
import random
import sys
import time
from collections.abc import Mapping

import attrs

from jobledger.daemons.daemon import filesystem_domain
from jobledger.daemons.input_files import read_text
from jobledger.daemons.safe_open import safe_open_fd
from jobledger.daemons.transfer import tree_size
from jobledger.eventcore.submit import description as _description
from jobledger.eventcore.submit import jobs as _jobs


class OsSubmitEnvironment:
    """Reads relative paths against ``cwd`` (the process's current directory
    when the environment was made)."""

    def __init__(self, cwd: str | None = None, rng: random.Random | None = None):
        self.cwd = os.path.abspath(cwd or os.getcwd())
        self._rng = rng          # made when first asked ($RANDOM_INTEGER): seeding reads urandom
        self.domain = filesystem_domain()

    def _path(self, path: str) -> str:
        return os.path.join(self.cwd, os.path.expanduser(path))

    def read_file(self, path: str) -> str:
        """UTF-8 text of ``path``; ``SubmitError`` for bytes that are not
        (``eventcore.submit.text``), ``OSError`` for a FIFO, socket or directory."""
        return read_submit_file(self._path(path), path)

    def glob(self, pattern: str) -> list[tuple[str, bool]]:
        matches = glob.glob(pattern, root_dir=self.cwd)
        return sorted((m, os.path.isdir(self._path(m))) for m in matches)

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(self._path(path))

    def file_size(self, path: str) -> int | None:
        try:
            return os.path.getsize(self._path(path))
        except OSError:
            return None

    def input_size(self, path: str) -> int:
        """A file's size, or a directory's files' total, as a transfer would copy
        them (``transfer.tree_size``); 0 for what cannot be read."""
        try:
            return tree_size(self._path(path))
        except OSError:
            return 0

    def getenv(self, name: str) -> str | None:
        return os.environ.get(name)

    def environ(self) -> Mapping[str, str]:
        return dict(os.environ)

    def now(self) -> int:
        return int(time.time())

    def randint(self, low: int, high: int) -> int:
        if self._rng is None:
            self._rng = random.Random()
        return self._rng.randint(low, high)


def read_submit_file(path: str, shown: str | None = None) -> str:
    """Text of a submit, include or item file (``daemons.input_files.read_text``:
    ``/dev/zero`` fails at once, a FIFO nobody writes is refused, not waited on)."""
    return read_text(path, shown)


class Submit(_description.Submit):
    """``htcondor2.Submit`` for the submitting process (files relative to the
    current directory at construction)."""

    environment_factory = OsSubmitEnvironment

    @staticmethod
    def from_dag(filename: str, options: dict | None = None) -> "Submit":
        """condor_submit_dag -no_submit: write ``<dag>.condor.sub`` and return the DAGMan
        job's description (``Schedd.submit`` queues it).  As htcondor2's, a DAG that does
        not parse is submitted all the same: its DAGMan job reports the error and exits 1.  Files of
        an earlier run in the way: as htcondor2, the reasons on stderr and
        ``HTCondorException("Unable to write condor_dagman output files")``."""
        from jobledger.daemons.dagman.submit_dag import PYTHON_HINT, DagOutputExists, write_submit_file
        try:
            return Submit(write_submit_file(filename, options, strict=False))
        except DagOutputExists as exc:
            print(exc.explained(PYTHON_HINT), file=sys.stderr)
            raise

    @staticmethod
    def from_dag_options() -> dict:
        """The options ``from_dag`` takes, name -> type name."""
        from jobledger.daemons.dagman.submit_dag import dagman_options
        return dagman_options()


def build_cluster(description, cluster: int, count: int = 0, itemdata=None, queue: str | None = None,
                  spool: bool = False, cwd: str | None = None, owner: str = "",
                  qdate: int | None = None, max_jobs: int | None = None):
    """A whole submit at once: ``(cluster_ad, proc_ads, warnings)``.

    ``cluster_ad`` maps attribute names to ClassAd expression text common to
    every proc; ``proc_ads`` is one such dict per proc (ProcId, JobStatus and
    whatever differs).  Raises ``SubmitError`` (a ValueError) on bad input.
    """
    stream = build_stream(description, cluster, count, itemdata, queue, spool, cwd, owner, qdate,
                          max_jobs)
    return stream.cluster_attrs, list(stream.procs()), list(stream.warnings)


def build_stream(description, cluster: int, count: int = 0, itemdata=None, queue: str | None = None,
                 spool: bool = False, cwd: str | None = None, owner: str = "",
                 qdate: int | None = None, max_jobs: int | None = None) -> _jobs.ClusterStream:
    """``Schedd.submit``'s half of a submit: a ``ClusterStream`` whose procs are
    made (and their user logs checked) as they are sent.  The statement, the
    cluster ad and its user log are checked at once (``SubmitError``); a bad
    value met later comes from the iteration."""
    env = OsSubmitEnvironment(cwd)
    stream = _jobs.stream_cluster(description, env, cluster_id=cluster, count=count, itemdata=itemdata,
                                  queue=queue, spool=spool, owner=owner, max_jobs=max_jobs,
                                  qdate=env.now() if qdate is None else qdate)
    check_user_logs(description, [stream.cluster_attrs.get("UserLog")])
    made = stream.procs

    def procs():
        seen = set()
        for proc in made():
            log = proc.get("UserLog")
            if log is not None and log not in seen:
                check_user_logs(description, [log])
                seen.add(log)
            yield proc
    return attrs.evolve(stream, procs=procs)


def jobs_stream(description, queue: str | None = None, spool: bool = False, owner: str = ""):
    """The job ads ``description`` would make (``ClusterStream``, cluster 1), with
    nothing checked or created: what condor_submit looks at before it submits."""
    env = OsSubmitEnvironment(None)
    return _jobs.stream_cluster(description, env, cluster_id=1, queue=queue, spool=spool,
                                owner=owner, qdate=env.now())


def check_user_logs(description, texts) -> None:
    """condor_submit's check before a submit: every user log (ClassAd string
    text; None skipped) can be opened for appending (created if new);
    ``SubmitError`` naming the ``log`` line otherwise."""
    from jobledger.eventcore.classad.api import unquote
    from jobledger.eventcore.errors import SubmitError
    for text in sorted(t for t in texts if t):
        path = unquote(text)
        try:
            os.close(safe_open_fd(path, "ab"))
        except OSError as exc:
            line, source = description._lines.get("log", (None, "<submit>"))
            reason = exc.strerror or getattr(exc, "why", None) or str(exc)
            raise SubmitError(f'Invalid log file: "{path}" ({reason})', line,
                              f"log = {description.get('log', '')}", source) from None
