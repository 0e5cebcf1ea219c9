"""Change notification for files: one watchdog watch per DIRECTORY, not per file.

The handler only notes which watched file changed and wakes its owner; the
owner (a tracker) reads.  Where notifications are not available (no inotify,
a watch limit reached, a network file system that never reports) the owner
falls back to polling: ``notifying`` is False and ``poll_dirty()`` compares
each file's size with what the owner has read.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

__all__ = ["DirectoryWatcher"]


class _NoteChange(FileSystemEventHandler):
    """Notes that a watched file in one directory changed; never reads it."""

    def __init__(self, watcher: "DirectoryWatcher", directory: str):
        self._watcher = watcher
        self._directory = directory

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        paths = [event.src_path, getattr(event, "dest_path", "")]
        self._watcher._note(self._directory, [os.fsdecode(p) for p in paths if p])


class DirectoryWatcher:
    """Watches the directories of a set of files and collects the changed ones."""

    def __init__(self, on_change: Callable[[], None], *, notify: bool = True):
        self._on_change = on_change
        self._lock = threading.Lock()
        self._names: dict[str, set[str]] = {}     # directory -> watched file names
        self._dirty: set[str] = set()
        self._observer: Observer | None = None    # made in start(): it owns threads
        self._started = False
        self.notifying = notify

    @staticmethod
    def _split(path: str | os.PathLike) -> tuple[str, str]:
        full = os.path.abspath(os.fspath(path))
        return os.path.dirname(full), os.path.basename(full)

    def add(self, paths: Iterable[str | os.PathLike]) -> None:
        """Watch these files (their directories get one watch each)."""
        for path in paths:
            directory, name = self._split(path)
            with self._lock:
                new_dir = directory not in self._names
                self._names.setdefault(directory, set()).add(name)
            if new_dir and self._started:
                self._schedule(directory)

    def _schedule(self, directory: str) -> None:
        try:
            self._observer.schedule(_NoteChange(self, directory), directory, recursive=False)
        except OSError:
            self.notifying = False                # fall back to polling for everything

    @property
    def watching(self) -> bool:
        """True while notifications are on (started and available)."""
        return self._started and self.notifying

    @property
    def directories(self) -> int:
        return len(self._names)

    def _note(self, directory: str, paths: list[str]) -> None:
        hit = False
        with self._lock:
            names = self._names.get(directory, ())
            for path in paths:
                d, name = self._split(path)
                if d == directory and name in names:
                    self._dirty.add(os.path.join(directory, name))
                    hit = True
        if hit:
            self._on_change()

    def take_dirty(self) -> set[str]:
        """The watched files that changed since the last call."""
        with self._lock:
            dirty, self._dirty = self._dirty, set()
        return dirty

    def start(self) -> None:
        """Start notifications (watches are only set up here: no threads before)."""
        if not self.notifying or self._started:
            return
        try:
            self._observer = Observer()
            self._observer.start()
        except OSError:
            self.notifying = False
            if self._observer is not None:
                self._observer.stop()
            return
        self._started = True
        with self._lock:
            directories = list(self._names)
        for directory in directories:
            self._schedule(directory)

    def stop(self) -> None:
        if self._observer is not None and self._started:
            self._observer.stop()
            self._observer.join()
            self._started = False

    @staticmethod
    def size(path: str | os.PathLike) -> int | None:
        try:
            return Path(path).stat().st_size
        except FileNotFoundError:
            return None
