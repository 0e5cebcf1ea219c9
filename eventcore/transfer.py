"""What a job's file transfer moves, decided from its ad alone (pure: no I/O).

HTCondor's rules (its manual's file-transfer chapter and condor_submit):

- A job gets its own scratch directory (the sandbox, ``_CONDOR_SCRATCH_DIR``,
  its working directory) when ``ShouldTransferFiles`` is ``YES``, or
  ``IF_NEEDED`` and the machine is not in the job's ``FileSystemDomain``.
- Input: the executable (unless ``TransferExecutable`` is false), stdin
  (``In``, unless ``TransferIn`` is false) and every entry of
  ``TransferInput``: a file lands under its base name; a directory ``d``
  lands as ``d/``; ``d/`` (trailing slash) puts d's contents at the top;
  relative paths are relative to ``Iwd``; ``file://`` URLs name local files.
- Output: ``TransferOutput`` names exactly what comes back (files, or
  directories with the same slash rule, landing under their base names);
  without it, every new or changed regular file at the sandbox's top level.
  ``TransferOutputRemaps`` (``a = b; c = dir/d``) renames on the way back,
  relative to ``Iwd`` or absolute.  stdout/stderr go to ``Out``/``Err``.
- Names on the sandbox side must stay in it: absolute paths and ``..`` in
  ``TransferOutput`` or in a remap's source are refused (hold code 12).

The daemons do the copying (``daemons/transfer.py``); everything here is a
value: ``input_plan(job)``, ``output_plan(job, changed)``.
"""

from __future__ import annotations

import posixpath
import re

import attrs

from jobledger.eventcore.errors import TransferError

# Hold codes (schedd.md 2.1) and the FILE_TRANSFER event's Type numbers.
HOLD_OUTPUT, HOLD_INPUT = 12, 13
HOLD_RESOURCES, SUBCODE_DISK = 34, 104
HOLD_MAX_INPUT, HOLD_MAX_OUTPUT = 32, 33     # MaxTransferInputSizeExceeded, ...OutputSizeExceeded
IN_STARTED, IN_FINISHED, OUT_STARTED, OUT_FINISHED = 2, 3, 5, 6

STDOUT, STDERR = "_condor_stdout", "_condor_stderr"
# Starter bookkeeping kept in the sandbox, never transferred.
PRIVATE = frozenset({STDOUT, STDERR, "outcome.json", "outcome.json.tmp", "starter.json"})


@attrs.frozen
class Source:
    """One input: ``path`` on the submit side lands as ``name`` in the sandbox
    (``name`` "" with ``contents``: the directory's entries land at the top)."""

    path: str
    name: str
    contents: bool = False
    executable: bool = False


@attrs.frozen
class InputPlan:
    sources: tuple[Source, ...]
    command: str            # what to run: a sandbox name ("./x") or an absolute path
    stdin: str | None       # sandbox-relative stdin, an absolute path, or None (/dev/null)


@attrs.frozen
class Output:
    """``name`` (a sandbox path) goes to ``dest`` (absolute); ``contents``: a
    directory whose entries go into ``dest``."""

    name: str
    dest: str
    contents: bool = False


def flag(job: dict, name: str, default: bool) -> bool:
    """A boolean job attribute (true/false, yes/no, 1/0), ``default`` when absent."""
    value = job.get(name)
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value.strip().lower() in ("true", "yes", "1")
    if isinstance(value, (int, float)):
        return value != 0
    return default


def wants_sandbox(job: dict, machine_domain: str) -> bool:
    """Does this job run in its own scratch directory with its files transferred?"""
    mode = str(job.get("ShouldTransferFiles") or "NO").upper()
    if mode == "YES":
        return True
    if mode == "IF_NEEDED":
        domain = job.get("FileSystemDomain")
        return isinstance(domain, str) and domain != machine_domain
    return False


def output_on_evict(job: dict) -> bool:
    return str(job.get("WhenToTransferOutput") or "").upper() == "ON_EXIT_OR_EVICT"


def split_list(text) -> list[str]:
    if not isinstance(text, str):
        return []
    return [part.strip() for part in text.split(",") if part.strip()]


def _local_path(entry: str, iwd: str) -> str:
    if "://" in entry:
        scheme, _, rest = entry.partition("://")
        if scheme.lower() != "file":
            raise TransferError(HOLD_INPUT, 0, f"no plugin for the URL scheme {scheme!r} of {entry}")
        if not rest.startswith("/"):
            raise TransferError(HOLD_INPUT, 0, f"{entry} is not an absolute file:// URL")
        return rest
    return entry if entry.startswith("/") else posixpath.join(iwd, entry)


def _source(entry: str, iwd: str) -> Source:
    path = _local_path(entry, iwd)
    if path.endswith("/") and len(path) > 1:
        return Source(path.rstrip("/"), "", contents=True)
    name = posixpath.basename(path)
    if name in ("", ".", ".."):
        raise TransferError(HOLD_INPUT, 0, f"transfer_input_files entry {entry!r} names no file")
    return Source(posixpath.normpath(path), name)


def input_plan(job: dict) -> InputPlan:
    """The inputs of a sandboxed job; ``TransferError(13)`` for an entry that cannot be."""
    iwd = str(job.get("Iwd") or "/")
    sources: list[Source] = []
    cmd = str(job.get("Cmd") or "")
    if cmd and flag(job, "TransferExecutable", True):
        path = _local_path(cmd, iwd)
        name = posixpath.basename(path)
        sources.append(Source(path, name, executable=True))
        command = "./" + name
    else:
        command = cmd
    stdin = job.get("In")
    if not isinstance(stdin, str) or stdin in ("", "/dev/null"):
        stdin = None
    elif flag(job, "TransferIn", True):
        source = _source(stdin, iwd)
        sources.append(source)
        stdin = source.name
    sources.extend(_source(entry, iwd) for entry in split_list(job.get("TransferInput")))
    if proxy_name(job) is not None:   # the X.509 proxy goes with the inputs, as HTCondor sends it
        sources.append(_source(str(job["x509userproxy"]), iwd))
    return InputPlan(tuple(sources), command, stdin)


def proxy_name(job: dict) -> str | None:
    """The sandbox name of the job's X.509 proxy (``x509userproxy``), if it has one."""
    path = job.get("x509userproxy")
    if not isinstance(path, str) or not path.strip():
        return None
    return posixpath.basename(path.strip()) or None


def parse_remaps(text) -> dict[str, str]:
    """``"a = b; c = d"`` as {a: b, c: d} (``\\;`` and ``\\=`` are literal)."""
    if not isinstance(text, str):
        return {}
    out: dict[str, str] = {}
    for part in _split_escaped(text.strip().strip('"'), ";"):
        if not part.strip():
            continue
        pieces = _split_escaped(part, "=")
        if len(pieces) != 2 or not pieces[0].strip() or not pieces[1].strip():
            raise TransferError(HOLD_OUTPUT, 0, f"transfer_output_remaps entry {part.strip()!r} is not 'name = new name'")
        out[_unescape(pieces[0].strip())] = _unescape(pieces[1].strip())
    return out


def _unescape(text: str) -> str:
    return re.sub(r"\\([;=\\])", r"\1", text)


def _split_escaped(text: str, sep: str) -> list[str]:
    """``text`` split at unescaped ``sep`` (escapes kept for the next split)."""
    parts, word, i = [], [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text) and text[i + 1] in ";=\\":
            word.append(text[i:i + 2])
            i += 2
            continue
        if text[i] == sep:
            parts.append("".join(word))
            word = []
        else:
            word.append(text[i])
        i += 1
    parts.append("".join(word))
    return parts


def sandbox_name(name: str, what: str) -> str:
    """``name`` normalised, or ``TransferError(12)`` if it leaves the sandbox."""
    if name.startswith("/"):
        raise TransferError(HOLD_OUTPUT, 0, f"{what} {name!r} is an absolute path: only names inside "
                                            "the job's scratch directory can be transferred")
    norm = posixpath.normpath(name)
    if norm == ".." or norm.startswith("../"):
        raise TransferError(HOLD_OUTPUT, 0, f"{what} {name!r} leaves the job's scratch directory")
    return norm


def stream_outputs(job: dict) -> list[Output]:
    """stdout/stderr of a sandboxed job and where they go."""
    iwd = str(job.get("Iwd") or "/")
    out = []
    for attr, name, wanted in (("Out", STDOUT, "TransferOut"), ("Err", STDERR, "TransferErr")):
        path = job.get(attr)
        if attr == "Err" and path == job.get("Out"):
            break  # one file for both streams: the job wrote it as its stdout
        if isinstance(path, str) and path not in ("", "/dev/null") and flag(job, wanted, True):
            out.append(Output(name, posixpath.join(iwd, path)))
    return out


def output_plan(job: dict, changed: list[str]) -> list[Output]:
    """What goes back after the run: ``changed`` are the new or changed regular
    files at the sandbox's top level (used when ``TransferOutput`` is absent)."""
    iwd = str(job.get("Iwd") or "/")
    remaps = {sandbox_name(k, "transfer_output_remaps name"): v
              for k, v in parse_remaps(job.get("TransferOutputRemaps")).items()}
    explicit = job.get("TransferOutput")
    items: list[Output] = []
    if isinstance(explicit, str):
        for entry in split_list(explicit):
            contents = entry.endswith("/")
            name = sandbox_name(entry.rstrip("/") or entry, "transfer_output_files entry")
            if name == ".":
                raise TransferError(HOLD_OUTPUT, 0, f"transfer_output_files entry {entry!r} names no file")
            landing = "" if contents else posixpath.basename(name)
            items.append(Output(name, _dest(iwd, remaps, landing, name), contents))
    else:
        items = [Output(name, _dest(iwd, remaps, name, name))
                 for name in sorted(changed) if name not in PRIVATE]
    return stream_outputs(job) + items


def evicted_plan(job: dict, changed: list[str], spool: str) -> list[Output]:
    """ON_EXIT_OR_EVICT after an eviction: the outputs (by their sandbox names,
    no remaps, no streams) go to the job's spool and come back as input next run."""
    explicit = job.get("TransferOutput")
    if isinstance(explicit, str):
        names = [sandbox_name(e.rstrip("/") or e, "transfer_output_files entry") for e in split_list(explicit)]
    else:
        names = [name for name in changed if name not in PRIVATE]
    return [Output(name, posixpath.join(spool, name)) for name in names]


def _dest(iwd: str, remaps: dict, landing: str, name: str) -> str:
    """Where sandbox file ``name`` (landing as ``landing`` in Iwd) goes."""
    target = remaps.get(name) or remaps.get(landing) or landing
    return posixpath.normpath(posixpath.join(iwd, target)) if target else iwd


def remap_for(job: dict, landing: str) -> str:
    """Where a file that lands as ``landing`` (a directory's entry) goes: its remap or Iwd/landing."""
    iwd = str(job.get("Iwd") or "/")
    remaps = parse_remaps(job.get("TransferOutputRemaps"))
    return posixpath.normpath(posixpath.join(iwd, remaps.get(landing, landing)))


def changed_files(before: dict, after: dict) -> list[str]:
    """Names in ``after`` (name -> (mtime_ns, size) of regular files) that are
    new or differ from ``before``."""
    return sorted(name for name, stamp in after.items() if before.get(name) != stamp)


def size_mb(size_bytes: int) -> int:
    """HTCondor's TransferInputSizeMB: whole megabytes, rounded up."""
    return (int(size_bytes) + (1 << 20) - 1) >> 20
