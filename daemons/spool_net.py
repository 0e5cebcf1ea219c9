"""Spool and retrieve for a client on another machine: the files travel in the frames.

A client that reaches the schedd through the pool's port shares no file system
with it, so the schedd must never read or write a path the job's ad names (those
are the client's).  Instead:

- ``Schedd.spool``: the client stages each job's inputs (the same plan and copy
  rules as a local spool, ``transfer.stage_input``) into a temporary directory of
  its own and sends them as an upload of pieces (``send_inputs``).  The schedd
  (``Incoming``) writes them under ``$(SPOOL)/.incoming/<random>/<job>``, each name
  confined there (relative, no ``..``, no links followed, nothing written twice),
  within NET_MAX_SPOOL_MB (and MAX_TRANSFER_INPUT_MB when that is a number) and
  NET_MAX_SPOOL_FILES.  Only once every piece has arrived and each job's planned
  inputs are all there are they moved to the jobs' spools and the jobs released
  (one journal append); a refusal or a client gone midway leaves nothing but the
  jobs still held with HoldReasonCode 16, waiting for their input.
- ``Schedd.retrieve``: the schedd streams what each completed job sent back
  (``outputs``); the client (``fetch_outputs``) writes it into a temporary
  directory, again confining every name, and delivers it into the job's submit
  directory by the job's SUBMIT_* attributes, as a local retrieve does
  (``spool.deliver_outputs``).

A piece is ``{"job": "C.P", "path": "a/b", "mode": 0o644, "offset": N, "data":
base64}`` (a file's pieces in order, the first at offset 0, an empty file one
piece with no data) or ``{"job", "path", "mode", "dir": true}``; a retrieved
job's pieces follow a header ``{"job": "C.P", "attrs": {SUBMIT_...}}``.
"""

from __future__ import annotations

import base64
import binascii
import errno
import os
import shutil
import stat
import tempfile
import uuid
from pathlib import Path

from jobledger.daemons import spool, transfer
from jobledger.eventcore import transfer as plan
from jobledger.eventcore.errors import HTCondorIOError, HTCondorValueError, TransferError
from jobledger.eventcore.ids import JobId

PIECE = 1 << 20              # bytes of a file in one frame (before base64)
MAX_PATH = 1024              # characters of a sandbox-relative name
MAX_DEPTH = 32               # directories deep
INCOMING = ".incoming"       # under $(SPOOL): uploads not yet whole


def confined(where: str, job: str, path) -> tuple[str, ...]:
    """The components of a sandbox-relative ``path`` sent for ``job``; a
    ``HTCondorValueError`` naming it when it could lead anywhere else."""
    def refuse(why: str):
        raise HTCondorValueError(f"{where}: job {job}: the file name {path!r} is refused: {why}")
    if not isinstance(path, str) or not path:
        refuse("it is empty or not a string")
    if len(path) > MAX_PATH or "\x00" in path:
        refuse(f"longer than {MAX_PATH} characters or holding a NUL byte")
    if path.startswith("/"):
        refuse("it is an absolute path (names must stay inside the job's spool directory)")
    parts = tuple(path.split("/"))
    if any(part in ("", ".", "..") for part in parts):
        refuse("it has an empty, '.' or '..' component (names must stay inside the job's "
               "spool directory)")
    if len(parts) > MAX_DEPTH or any(len(os.fsencode(part)) > 255 for part in parts):
        refuse(f"deeper than {MAX_DEPTH} directories or with a component over 255 bytes")
    return parts


class _Writer:
    """Pieces into a directory tree made here from nothing: every directory is made
    by ``mkdir`` (never an existing link followed), every file opened O_EXCL."""

    def __init__(self, root: Path, where: str):
        self.root = root
        self.where = where
        self.current: tuple[str, str, int, int] | None = None   # job, path, fd, offset

    def directory(self, job: str, parts: tuple[str, ...], mode: int | None = None) -> Path:
        here = self.root / job
        for part in parts:
            here = here / part
            try:
                os.mkdir(here, 0o700)
            except FileExistsError:
                if not stat.S_ISDIR(os.lstat(here).st_mode):
                    raise HTCondorValueError(f"{self.where}: job {job}: {part!r} is both a file "
                                             "and a directory") from None
        if mode is not None:
            os.chmod(here, (mode & 0o777) | 0o700)
        return here

    def piece(self, job: str, path: str, parts: tuple[str, ...], mode: int, offset, data: bytes) -> None:
        if offset == 0:
            self.close()
            parent = self.directory(job, parts[:-1])
            try:
                fd = os.open(parent / parts[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                             0o600)
            except FileExistsError:
                raise HTCondorValueError(f"{self.where}: job {job}: the file {path!r} was sent "
                                         "twice") from None
            os.fchmod(fd, mode & 0o777)
            self.current = (job, path, fd, 0)
        elif self.current is None or self.current[:2] != (job, path) or self.current[3] != offset:
            raise HTCondorValueError(f"{self.where}: job {job}: a piece of {path!r} at offset "
                                     f"{offset} does not follow the pieces before it")
        job_, path_, fd, done = self.current    # type: ignore[misc]
        _write_all(fd, data)
        self.current = (job_, path_, fd, done + len(data))

    def close(self) -> None:
        if self.current is not None:
            os.close(self.current[2])
            self.current = None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _decode(where: str, job: str, path: str, text) -> bytes:
    if not isinstance(text, str):
        raise HTCondorValueError(f"{where}: job {job}: a piece of {path!r} carries no data")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise HTCondorValueError(f"{where}: job {job}: a piece of {path!r} is not base64") from None


def apply(writer: _Writer, where: str, job: str, item: dict, take=None) -> int:
    """One piece (a directory, or part of a file) of ``job`` written; its bytes
    (``take(n)``, if given, is told them first and may refuse them)."""
    path = item.get("path")
    parts = confined(where, job, path)
    mode = item.get("mode")
    mode = mode if isinstance(mode, int) and not isinstance(mode, bool) else 0o644
    if item.get("dir") is True:
        writer.close()
        writer.directory(job, parts, mode)
        return 0
    offset = item.get("offset")
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise HTCondorValueError(f"{where}: job {job}: a piece of {path!r} has no offset")
    data = _decode(where, job, str(path), item.get("data"))
    if take is not None:
        take(len(data), path)
    writer.piece(job, str(path), parts, mode, offset, data)
    return len(data)


class Incoming:
    """The inputs of ``jobs`` (ids "C.P") as they arrive, under ``spool_dir/.incoming``,
    within ``max_bytes`` in all and ``max_files`` files; removed on leaving the
    ``with`` unless ``install``ed."""

    WHERE = "spooling input files"

    def __init__(self, spool_dir: Path, jobs: list[str], max_bytes: int, max_files: int):
        self.spool_dir = Path(spool_dir)
        self.jobs = set(jobs)
        self.max_bytes = max_bytes
        self.max_files = max_files
        self.used = 0
        self.files = 0
        self.root = self.spool_dir / INCOMING / uuid.uuid4().hex

    def __enter__(self) -> "Incoming":
        self.root.mkdir(parents=True, mode=0o700)
        for job in self.jobs:
            (self.root / job).mkdir(mode=0o700)
        self.writer = _Writer(self.root, self.WHERE)
        return self

    def __exit__(self, *exc) -> None:
        self.writer.close()
        shutil.rmtree(self.root, ignore_errors=True)

    def take(self, chunk) -> None:
        where = self.WHERE
        if not isinstance(chunk, dict) or not isinstance(chunk.get("job"), str):
            raise HTCondorValueError(f"{where}: a piece names no job")
        job = chunk["job"]
        if job not in self.jobs:
            raise HTCondorValueError(f"{where}: a piece names job {job!r}, not one of those spooled")
        if chunk.get("offset") == 0:
            self.files += 1
            if self.files > self.max_files:
                raise HTCondorValueError(f"{where}: more than {self.max_files} files "
                                         "(NET_MAX_SPOOL_FILES): refused, nothing was spooled")
        apply(self.writer, where, job, chunk, lambda size, path: self._take(job, size, path))

    def _take(self, job: str, size: int, path: str) -> None:
        self.used += size
        if self.used > self.max_bytes:
            raise HTCondorValueError(
                f"{self.WHERE}: job {job}: the input files are over {self.max_bytes >> 20} MB "
                f"(NET_MAX_SPOOL_MB, MAX_TRANSFER_INPUT_MB) at {path!r}: refused, nothing was spooled")

    def check(self, job: str, inputs: plan.InputPlan) -> None:
        """Every input the job's plan names by name (not a directory's contents) arrived."""
        self.writer.close()
        for source in inputs.sources:
            if source.name and not os.path.lexists(self.root / job / source.name):
                raise HTCondorValueError(f"{self.WHERE}: job {job}: the input {source.name!r} "
                                         "did not arrive: nothing was spooled")

    def install(self, job: JobId) -> Path:
        """Move job's arrived inputs to ``$(SPOOL)/C/P/in`` (an empty ``out`` beside);
        the job's spool directory."""
        where = spool.job_spool(self.spool_dir, job)
        shutil.rmtree(where, ignore_errors=True)
        where.mkdir(parents=True)
        os.rename(self.root / str(job), where / "in")
        (where / "out").mkdir()
        return where


def pieces(job: str, root: str):
    """The pieces of the tree ``root`` for ``job``: its regular files and directories
    (a symbolic link is skipped: nothing outside ``root`` is ever read)."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(name for name in dirs if not os.path.islink(os.path.join(folder, name)))
        rel = os.path.relpath(folder, root)
        for name in dirs:
            path = name if rel == "." else f"{rel}/{name}"
            yield {"job": job, "path": path, "dir": True,
                   "mode": stat.S_IMODE(os.stat(os.path.join(folder, name)).st_mode)}
        for name in sorted(files):
            path = name if rel == "." else f"{rel}/{name}"
            full = os.path.join(folder, name)
            try:
                fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    continue        # a symbolic link
                raise HTCondorIOError(f"reading {full}: {exc.strerror or exc}") from exc
            try:
                with open(fd, "rb") as handle:
                    info = os.fstat(handle.fileno())
                    if not stat.S_ISREG(info.st_mode):
                        continue
                    mode = stat.S_IMODE(info.st_mode)
                    offset = 0
                    while True:
                        data = handle.read(PIECE)
                        if data or offset == 0:
                            yield {"job": job, "path": path, "mode": mode, "offset": offset,
                                   "data": base64.b64encode(data).decode("ascii")}
                        if len(data) < PIECE:
                            break
                        offset += len(data)
            except OSError as exc:
                raise HTCondorIOError(f"reading {full}: {exc.strerror or exc}") from exc


# -- the client's side -----------------------------------------------------------

def send_inputs(ads: dict[str, dict]):
    """The pieces of every job's inputs (``ads``: id -> the job's ad, expression text),
    staged one job at a time by the rules of a local spool; a job whose input cannot
    be read raises ``HTCondorIOError`` naming it (the upload then breaks off and the
    schedd keeps nothing)."""
    from jobledger.eventcore.decide.runs import starter_job
    for job, ad in ads.items():
        try:
            inputs = plan.input_plan(starter_job(ad))
        except TransferError as failed:
            raise HTCondorIOError(f"spooling the input of job {job}: {failed.message}") from None
        with tempfile.TemporaryDirectory(prefix="jobledger-spool-") as staged:
            try:
                transfer.stage_input(inputs, staged)
            except TransferError as failed:
                raise HTCondorIOError(f"spooling the input of job {job}: {failed.message}") from None
            yield from pieces(job, staged)


def fetch_outputs(items) -> int:
    """Write the streamed outputs (``items``: a ``retrieve_files`` reply) into each
    job's submit directory; the number of jobs delivered."""
    done = 0
    current: tuple[str, dict, str] | None = None
    scratch = tempfile.mkdtemp(prefix="jobledger-retrieve-")
    try:
        writer = _Writer(Path(scratch), "retrieving output files")
        for item in items:
            if not isinstance(item, dict) or not isinstance(item.get("job"), str):
                raise HTCondorIOError("retrieving output files: the schedd sent a piece naming no job")
            job = item["job"]
            try:
                JobId.parse(job)
            except ValueError:
                raise HTCondorIOError(f"retrieving output files: the schedd sent job {job!r}") from None
            if "attrs" in item:
                if current is not None:
                    writer.close()
                    _deliver(*current)
                    done += 1
                (Path(scratch) / job).mkdir()
                current = (job, dict(item["attrs"]), os.path.join(scratch, job))
                continue
            if current is None or current[0] != job:
                raise HTCondorIOError(f"retrieving output files: a piece of job {job} came unannounced")
            try:
                apply(writer, "retrieving output files", job, item)
            except HTCondorValueError as bad:
                raise HTCondorIOError(str(bad)) from None
        writer.close()
        if current is not None:
            _deliver(*current)
            done += 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return done


def _deliver(job: str, attrs: dict, out: str) -> None:
    try:
        spool.deliver_outputs(Path(out), JobId.parse(job), attrs)
    except TransferError as failed:
        raise HTCondorIOError(f"retrieving the output of job {job} failed: {failed.message}") from None


# -- the schedd's side of retrieve -------------------------------------------------

def outputs(spool_dir: Path, jobs: list[tuple[JobId, dict]]):
    """Batches of the pieces of each job's returned files (``$(SPOOL)/C/P/out``),
    each job's header first."""
    for job, ad in jobs:
        attrs = {f"SUBMIT_{name}": ad[f"SUBMIT_{name}"] for name in spool.SAVED if f"SUBMIT_{name}" in ad}
        yield [{"job": str(job), "attrs": attrs}]
        out = spool.job_spool(spool_dir, job) / "out"
        if out.is_dir():
            for item in pieces(str(job), str(out)):
                yield [item]
