"""Progress bars on long CLI work, through tqdm, on stderr.

``bar(total, what, unit, quiet)`` is a tqdm bar when stderr is a terminal and
the user did not ask for ``--quiet``; otherwise a bar that draws nothing, so
piped or redirected output, logs and CI stay plain text.  ``say(text)``
prints a line above a live bar (or plainly when there is none).
"""

from __future__ import annotations

import sys

import click

__all__ = ["bar", "shown", "quiet_option"]

quiet_option = click.option("--quiet", "-q", is_flag=True,
                            help="No progress bar (there is none off a terminal either).")


def shown(quiet: bool = False) -> bool:
    """A bar would be drawn: stderr is a terminal and not ``--quiet``."""
    stream = sys.stderr
    return not quiet and hasattr(stream, "isatty") and stream.isatty()


class _Plain:
    """What a bar offers, drawing nothing."""

    def __init__(self, total=None):
        self.total, self.n = total, 0

    def update(self, n: int = 1) -> None:
        self.n += n

    def set_postfix_str(self, text: str) -> None:
        pass

    def close(self) -> None:
        pass

    def write(self, text: str) -> None:
        click.echo(text)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _Bar(_Plain):
    def __init__(self, total, what, unit):
        from tqdm import tqdm
        super().__init__(total)
        self._tqdm = tqdm(total=total, desc=what, unit=unit, unit_scale=True, file=sys.stderr,
                          leave=False, dynamic_ncols=True, mininterval=0.2)

    def update(self, n: int = 1) -> None:
        self.n += n
        self._tqdm.update(n)

    def set_postfix_str(self, text: str) -> None:
        self._tqdm.set_postfix_str(text, refresh=False)

    def close(self) -> None:
        self._tqdm.close()

    def write(self, text: str) -> None:
        from tqdm import tqdm
        with tqdm.external_write_mode(file=sys.stderr):
            click.echo(text)


def bar(total: int | None, what: str, unit: str = "it", quiet: bool = False):
    """A progress bar of ``total`` ``unit``s (None: unknown), or a plain stand-in."""
    return _Bar(total, what, unit) if shown(quiet) else _Plain(total)
