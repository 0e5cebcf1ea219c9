"""What the submit language needs from the outside world, as one value.

eventcore does no I/O and draws no random numbers: ``include``, ``queue ...
from FILE``, ``queue ... matching GLOB``, ``$ENV()``, ``$RANDOM_*()``,
``initialdir`` checks and the submit time all go through a
``SubmitEnvironment``.  ``StaticEnvironment`` is the pure one (files and
variables given as dicts, a fixed clock, a seeded generator) used by tests
and by callers that already hold the file contents; the real one lives in
``daemons/client/submit.py``.
"""

from __future__ import annotations

import fnmatch
import posixpath
from collections.abc import Mapping
from typing import Protocol

import attrs


class SubmitEnvironment(Protocol):
    """The submitter's side of a submit: files, variables, clock, randomness."""

    cwd: str
    domain: str      # the submitting host's FileSystemDomain

    def read_file(self, path: str) -> str:
        """Text of ``path`` (relative to ``cwd``); raises ``OSError`` when unreadable."""

    def glob(self, pattern: str) -> list[tuple[str, bool]]:
        depth = pattern.count("/")
        found = {(name, name in self.dirs) for name in [*self.files, *self.dirs]
                 if name.count("/") == depth and fnmatch.fnmatchcase(name, pattern)}
        return sorted(found)

    def is_dir(self, path: str) -> bool:
        """Whether ``path`` (relative to ``cwd``) is an existing directory."""

    def file_size(self, path: str) -> int | None:
        """Size of ``path`` in bytes, or None when it does not exist."""

    def input_size(self, path: str) -> int:
        """Bytes a transfer of ``path`` copies: a file's size, the total of a directory's
        files; 0 when it does not exist (condor_submit's input sandbox size)."""

    def getenv(self, name: str) -> str | None:
        """The submitter's environment variable, or None."""

    def environ(self) -> Mapping[str, str]:
        """The whole environment (for ``getenv = true``)."""

    def now(self) -> int:
        """Unix time of the submit."""

    def randint(self, low: int, high: int) -> int:
        """A random integer ``low <= n <= high``."""


def _xorshift(state: int) -> int:
    state ^= (state << 13) & 0xFFFFFFFFFFFFFFFF
    state ^= state >> 7
    state ^= (state << 17) & 0xFFFFFFFFFFFFFFFF
    return state & 0xFFFFFFFFFFFFFFFF


@attrs.define
class StaticEnvironment:
    """A pure environment: ``files`` maps paths (relative to ``cwd`` or
    absolute) to text, ``dirs`` lists directories, ``variables`` is the
    process environment, ``clock`` the submit time and ``seed`` drives a
    deterministic generator for ``$RANDOM_INTEGER()``/``$RANDOM_CHOICE()``."""

    files: Mapping[str, str] = attrs.field(factory=dict)
    dirs: frozenset[str] = attrs.field(factory=frozenset, converter=frozenset)
    variables: Mapping[str, str] = attrs.field(factory=dict)
    cwd: str = "/submit"
    clock: int = 0
    domain: str = "localdomain"
    seed: int = 0x9E3779B97F4A7C15

    def _abs(self, path: str) -> str:
        return posixpath.normpath(posixpath.join(self.cwd, path))

    def read_file(self, path: str) -> str:
        for key in (path, self._abs(path)):
            if key in self.files:
                return self.files[key]
        raise FileNotFoundError(2, "No such file or directory", path)

    def glob(self, pattern: str) -> list[tuple[str, bool]]:
        found = []
        for name in list(self.files) + list(self.dirs):
            if fnmatch.fnmatchcase(name, pattern) and "/" not in name[len(posixpath.dirname(pattern)) + 1:] \
                    if posixpath.dirname(pattern) else fnmatch.fnmatchcase(name, pattern) and "/" not in name:
                found.append((name, name in self.dirs))
        return sorted(set(found))

    def is_dir(self, path: str) -> bool:
        return path in self.dirs or self._abs(path) in self.dirs or self._abs(path) == self.cwd

    def file_size(self, path: str) -> int | None:
        try:
            return len(self.read_file(path).encode("utf-8"))
        except OSError:
            return None

    def input_size(self, path: str) -> int:
        if self.is_dir(path):
            top = self._abs(path).rstrip("/") + "/"
            return sum(len(text.encode("utf-8")) for name, text in self.files.items()
                       if self._abs(name).startswith(top))
        return self.file_size(path) or 0

    def getenv(self, name: str) -> str | None:
        return self.variables.get(name)

    def environ(self) -> Mapping[str, str]:
        return dict(self.variables)

    def now(self) -> int:
        return self.clock

    def randint(self, low: int, high: int) -> int:
        self.seed = _xorshift(self.seed or 1)
        return low + self.seed % (high - low + 1)
