"""What a command reads the queue and the history through.

``schedd_of(pool)``: the pool's running schedd, for commands that change
anything (submit, rm, hold, release) -- a stopped pool is an error saying how
to start it.  ``reader_of(pool)``: for read-only commands (q, history, dag
status): the running schedd, or, when the pool is stopped, ``JournalReader``
over its journal, which answers ``query`` and ``history`` as the schedd does
from the same tables (daemons.storage.views), ads as ClassAds.
"""

from __future__ import annotations

from collections.abc import Iterator

import click

from jobledger.eventcore.errors import HTCondorException, JobledgerError
from jobledger.cli.where import Pool

__all__ = ["schedd_of", "reader_of", "JournalReader", "query_exprs"]


def schedd_of(pool: Pool):
    """The running schedd of ``pool`` (a ``ClickException`` when it is stopped)."""
    from jobledger.daemons.client.api import Schedd
    try:
        pool.use()
    except JobledgerError as exc:
        raise click.ClickException(str(exc)) from None
    if not pool.running():
        raise click.ClickException(pool.stopped_message())
    try:
        return Schedd()
    except HTCondorException as exc:
        raise click.ClickException(f"the pool at {pool.local_dir} does not answer: {exc}") from None


def reader_of(pool: Pool):
    """The running schedd, else a ``JournalReader`` on the stopped pool's journal."""
    if pool.running():
        return schedd_of(pool)
    if not pool.journal.is_file():
        raise click.ClickException(f"no pool at {pool.local_dir} ({pool.journal.name} is missing; "
                                   f"found by {pool.how})")
    click.echo(f"note: the pool at {pool.local_dir} is stopped; this is what its journal holds",
               err=True)
    return JournalReader(pool)


class JournalReader:
    """``query`` and ``history`` of a stopped pool, read from its journal's projections
    (a journal that cannot be read is the project's error, for each CLI to show)."""

    def __init__(self, pool: Pool):
        self.pool = pool

    def _store(self):
        from jobledger.daemons.storage.store import Store
        return Store(self.pool.local_dir, readonly=True)

    def _read(self, how) -> list:
        from jobledger.daemons.client.api import to_ad
        store = self._store()
        try:
            return [to_ad(ad) for ad in how(store)]
        finally:
            store.close()

    def query(self, constraint=None, projection=(), limit: int = -1) -> list:
        return self._read(lambda s: s.query(_text(constraint), list(projection or []), limit))

    def query_exprs(self, constraint=None, projection=()) -> Iterator[dict]:
        """``query``'s ads in their wire form (attribute -> expression text), a page at
        a time (``Store.query_pages``): never the whole answer in memory."""
        store = self._store()
        try:
            for page in store.query_pages(_text(constraint), list(projection or [])):
                yield from page
        finally:
            store.close()

    def history(self, constraint=None, projection=(), match: int = -1, since=None) -> list:
        return self._read(lambda s: s.history(_text(constraint), list(projection or []), match, since))

    def epochs(self, constraint=None, projection=(), match: int = -1, since=None) -> list:
        """A record per run attempt (``condor_history -epochs``), folded from the journal."""
        from jobledger.daemons.schedd.epochs import epoch_records
        return self._read(lambda s: epoch_records(s, _text(constraint), list(projection or []), match,
                                                  None if since is None else str(since)))


def query_exprs(reader, constraint=None, projection=()) -> Iterator[dict]:
    """The queue's ads in their wire form, streamed, from what ``reader_of`` gave."""
    if isinstance(reader, JournalReader):
        return reader.query_exprs(constraint, projection)
    from jobledger.daemons.client.api import query_exprs as from_schedd
    return from_schedd(reader, constraint, projection)


def _text(constraint) -> str | None:
    if constraint is None:
        return None
    text = str(constraint).strip()
    return None if text == "" or text.lower() == "true" else text
