"""Which pool a command means: one rule for every command, ``jobledger`` and ``condor_*``.

1. ``--local-dir DIR`` (the ``jobledger`` commands): the pool in DIR, its
   configuration DIR/condor_config;
2. else ``$CONDOR_CONFIG``: that configuration, the pool in its ``LOCAL_DIR``;
3. else the personal pool in ``~/.condor/personal``.

``find_pool`` applies it; ``local_dir_option`` is the option every
``jobledger`` command takes, already resolved to a ``Pool``.  A read-only
command works on a stopped pool: it reads the journal in LOCAL_DIR
(``Pool.running`` says which).  A CONDOR_CONFIG that names no file, or one
without LOCAL_DIR, is an error naming it (``NoPool``), never a silent fallback.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from jobledger.eventcore.errors import JobledgerError

__all__ = ["Pool", "NoPool", "find_pool", "default_dir", "local_dir_option", "local_dir_value_option",
           "CONFIG_NAME"]

CONFIG_NAME = "condor_config"


class NoPool(JobledgerError):
    """The rule found no pool, or a configuration it cannot use."""


def default_dir() -> Path:
    """The personal pool's directory when nothing names another (~/.condor/personal)."""
    return Path.home() / ".condor" / "personal"


class Pool:
    """A pool's directory (LOCAL_DIR, which holds the journal) and configuration file."""

    def __init__(self, local_dir: Path, config: Path, how: str):
        self.local_dir = local_dir
        self.config = config
        self.how = how               # "--local-dir", "CONDOR_CONFIG" or "default": for messages

    def __repr__(self) -> str:
        return f"Pool({self.local_dir}, config={self.config}, found by {self.how})"

    @property
    def journal(self) -> Path:
        from jobledger.daemons.storage.schema import DB_NAME
        return self.local_dir / DB_NAME

    def running(self) -> bool:
        """A master holds the directory (the pool is up, or starting or stopping)."""
        from jobledger.daemons.master import pool_running_in
        return pool_running_in(self.local_dir) is not None

    def use(self) -> None:
        """Point this process (``param``, the clients) at the pool's configuration."""
        from jobledger.daemons.config_files import reload_config
        if not self.config.is_file():
            raise NoPool(f"no pool at {self.local_dir} ({self.config} is missing); "
                         f"start one with: jobledger pool start --local-dir {self.local_dir}")
        os.environ["CONDOR_CONFIG"] = str(self.config)
        reload_config()

    def stopped_message(self) -> str:
        return (f"the pool at {self.local_dir} is not running "
                f"(start it with: jobledger pool start --local-dir {self.local_dir})")


def find_pool(local_dir: str | os.PathLike | None = None) -> Pool:
    """The pool the command means (see the module docstring)."""
    if local_dir is not None and str(local_dir) != "":
        where = Path(local_dir).absolute()
        return Pool(where, where / CONFIG_NAME, "--local-dir")
    config = os.environ.get("CONDOR_CONFIG", "")
    if config:
        return Pool(_local_dir_of(Path(config)), Path(config).absolute(), "CONDOR_CONFIG")
    where = default_dir()
    return Pool(where, where / CONFIG_NAME, "default")


def _local_dir_of(config: Path) -> Path:
    from jobledger.daemons.config_files import config_value, read_pool_config
    if not config.exists() or config.is_dir():        # /dev/null is a configuration: an empty one
        raise NoPool(f"CONDOR_CONFIG names {config}, which is not a file "
                     "(give --local-dir, or unset CONDOR_CONFIG for ~/.condor/personal)")
    try:
        return Path(config_value(read_pool_config(config), "LOCAL_DIR")).absolute()
    except KeyError:
        raise NoPool(f"{config} (CONDOR_CONFIG) sets no LOCAL_DIR: give --local-dir") from None


class LazyPool:
    """The pool ``find_pool(value)`` names, found when a command first asks for it: a
    command that needs no pool on its path (``submit --dry-run``) never trips on a
    CONDOR_CONFIG it cannot use, one that does gets ``NoPool`` (one line, exit 1)."""

    def __init__(self, value: str | None):
        self._value = value
        self._pool: Pool | None = None

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        if self._pool is None:
            self._pool = find_pool(self._value)
        return getattr(self._pool, name)

    def __repr__(self) -> str:
        return f"LazyPool({self._value!r})"


local_dir_option = click.option(
    "--local-dir", "pool", default=None, callback=lambda ctx, param, value: LazyPool(value),
    metavar="DIR",
    type=click.Path(file_okay=False, path_type=str),
    help="The pool's LOCAL_DIR (default: LOCAL_DIR of $CONDOR_CONFIG, else ~/.condor/personal).")

# The same option, unresolved (DIR or None), for a command that needs the pool only on
# some paths (``watch`` with --log or --journal reads no pool): it calls ``find_pool``.
local_dir_value_option = click.option(
    "--local-dir", "local_dir", default=None, metavar="DIR",
    type=click.Path(file_okay=False, path_type=str),
    help="The pool's LOCAL_DIR (default: LOCAL_DIR of $CONDOR_CONFIG, else ~/.condor/personal).")
