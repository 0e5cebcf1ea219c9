"""A daemon's configuration read and set from outside: ``RemoteParam`` and
``condor_config_val -name/-set/-rset/-unset/-runset``, as HTCondor's DaemonCore does.

Reading: ``config_names`` (every name the daemon's configuration defines) and
``config_val`` (one name's expanded value, None when not defined).

Setting (condor_utils/condor_config.cpp, set_runtime_config and
set_persistent_config): an assignment ``NAME = value`` is kept for NAME,
and takes effect when the daemon next reads its configuration (a reconfig);
an empty assignment unsets it.  Runtime assignments (``-rset``, RemoteParam)
live in the daemon's memory and need ENABLE_RUNTIME_CONFIG; persistent ones
(``-set``) are files under PERSISTENT_CONFIG_DIR (or ``<SUBSYS>_CONFIG``)
-- ``.config.<SUBSYS>`` lists them (RUNTIME_CONFIG_ADMIN), one
``.config.<SUBSYS>.<name>`` file each -- read again at every start, and need
ENABLE_PERSISTENT_CONFIG.  Both switches are read once, when the daemon
starts, so no assignment can turn them on.  As in HTCondor, a name can be set
only if a SETTABLE_ATTRS_<level> (or ``<SUBSYS>_SETTABLE_ATTRS_<level>``)
list names it (``*`` wildcards, any case); the pool's own user, the only
peer a daemon answers, holds every level.  Persistent assignments are
applied before runtime ones.
"""

from __future__ import annotations

import fnmatch
import os
import re
from pathlib import Path

from jobledger.daemons.config_files import config_value
from jobledger.eventcore.config import ConfigTable, param_boolean, parse_config
from jobledger.eventcore.errors import ConfigError, HTCondorException

__all__ = ["RuntimeConfig", "LEVELS"]

LEVELS = ("READ", "WRITE", "NEGOTIATOR", "ADMINISTRATOR", "OWNER", "CONFIG", "DAEMON",
          "ADVERTISE_STARTD", "ADVERTISE_SCHEDD", "ADVERTISE_MASTER")
_NAME = re.compile(r"^[A-Za-z0-9_.]+$")
def _on(table: ConfigTable, name: str) -> bool:
    return param_boolean(name, config_value(table, name, ""), False, table.settings.get(name.upper()))


class RuntimeConfig:
    """One daemon's runtime and persistent assignments (see the module docstring)."""

    def __init__(self, table: ConfigTable, subsystem: str, log=None):
        self.subsystem = subsystem.upper()
        self.log = log
        self.runtime_enabled = _on(table, "ENABLE_RUNTIME_CONFIG")
        self.persistent_enabled = _on(table, "ENABLE_PERSISTENT_CONFIG")
        self.top: Path | None = None
        if self.persistent_enabled:
            own = config_value(table, f"{self.subsystem}_CONFIG", "")
            folder = config_value(table, "PERSISTENT_CONFIG_DIR", "")
            if own:
                self.top = Path(own)
            elif folder:
                self.top = Path(folder) / f".config.{self.subsystem}"
            else:
                raise ConfigError(f"ENABLE_PERSISTENT_CONFIG is TRUE, but neither {self.subsystem}_CONFIG "
                                  "nor PERSISTENT_CONFIG_DIR is specified in the configuration file")
        self.runtime: dict[str, str] = {}      # lower-case name -> assignment, in order set

    # -- applying ---------------------------------------------------------------------
    def applied(self, table: ConfigTable) -> ConfigTable:
        """``table`` with the persistent, then the runtime assignments read into it."""
        for name in self._persistent_names():
            path = self._file(name)
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            self._read_into(table, text, str(path))
        for name, text in self.runtime.items():
            self._read_into(table, text, f"<runtime config {name}>")
        return table

    def _read_into(self, table: ConfigTable, text: str, source: str) -> None:
        try:
            parse_config(text + "\n", source, table)
        except ConfigError as exc:      # kept from an older version: skipped, not fatal
            if self.log is not None:
                self.log.error("configuration assignment %s not applied: %s", source, exc)

    def _persistent_names(self) -> list[str]:
        if self.top is None or not self.top.is_file():
            return []
        try:
            found = parse_config(self.top.read_text(encoding="utf-8") + "\n", str(self.top))
        except (OSError, UnicodeDecodeError, ConfigError):
            return []
        listed = found.raw("RUNTIME_CONFIG_ADMIN") or ""
        return [n.strip().lower() for n in listed.replace(",", " ").split() if _NAME.match(n.strip())]

    def _file(self, name: str) -> Path:
        assert self.top is not None
        return self.top.with_name(f"{self.top.name}.{name.lower()}")

    # -- commands ---------------------------------------------------------------------
    def handlers(self, table_now) -> dict:
        """IPC commands: ``config_names``, ``config_val``, ``config_set`` over ``table_now()``."""
        return {
            "config_names": lambda peer: [s.name for s in table_now().settings.values()],
            "config_val": lambda peer, name: self._value(table_now(), name),
            "config_set": lambda peer, name, assignment="", persistent=False:
                self.set(table_now(), name, assignment, persistent),
        }

    @staticmethod
    def _value(table: ConfigTable, name: str) -> str | None:
        if not isinstance(name, str) or table.raw(name) is None:
            return None
        return config_value(table, name, "")

    def set(self, table: ConfigTable, name: str, assignment: str, persistent: bool) -> int:
        """Keep ``assignment`` for ``name`` (empty: unset it); 0, or ``HTCondorException``."""
        if not isinstance(name, str) or not _NAME.match(name):
            raise HTCondorException(f"Configuration variable name ({name}) is not valid, "
                                    "alphanumeric and _ only")
        assignment = (assignment or "").strip()
        kind = "persistent" if persistent else "runtime"
        if not (self.persistent_enabled if persistent else self.runtime_enabled):
            self._refuse(f"ENABLE_{kind.upper()}_CONFIG is false: not setting {kind} config "
                         f"{name} = {assignment!r}")
        if not self._settable(table, name):
            self._refuse(f"{name} is in no SETTABLE_ATTRS_<level> list: request refused")
        if assignment:
            try:
                defined = parse_config(assignment + "\n", f"<{kind} config {name}>")
            except ConfigError as exc:
                raise HTCondorException(f"Can't set configuration value ({assignment!r}): {exc}") from None
            if [n.upper() for n in defined.names()] != [name.upper()]:
                raise HTCondorException(f"Can't set configuration value ({assignment!r}): "
                                        f"it must assign {name} and nothing else")
        if persistent:
            self._persist(name.lower(), assignment)
        elif assignment:
            self.runtime.pop(name.lower(), None)
            self.runtime[name.lower()] = assignment
        else:
            self.runtime.pop(name.lower(), None)
        if self.log is not None:
            self.log.info("%s config %s: %s", kind, name, assignment or "(unset)")
        return 0

    def _refuse(self, why: str):
        if self.log is not None:
            self.log.warning("%s", why)
        raise HTCondorException(f"Failed to set remote daemon parameter: {why}")

    def _settable(self, table: ConfigTable, name: str) -> bool:
        for level in LEVELS:
            for knob in (f"{self.subsystem}_SETTABLE_ATTRS_{level}", f"SETTABLE_ATTRS_{level}"):
                listed = config_value(table, knob, "")
                if any(fnmatch.fnmatchcase(name.upper(), pattern.strip().upper())
                       for pattern in listed.replace(",", " ").split()):
                    return True
        return False

    def _persist(self, name: str, assignment: str) -> None:
        names = [n for n in self._persistent_names() if n != name]
        try:
            if assignment:
                _write(self._file(name), assignment + "\n")
                names.append(name)
            else:
                self._file(name).unlink(missing_ok=True)
            assert self.top is not None
            if names:
                _write(self.top, f"RUNTIME_CONFIG_ADMIN = {', '.join(names)}\n")
            else:
                self.top.unlink(missing_ok=True)
        except OSError as exc:
            self._refuse(f"cannot write the persistent configuration: {exc.strerror or exc}")


def _write(path: Path, text: str) -> None:
    """``text`` into ``path`` whole or not at all (a temporary file renamed), owner-only."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)
