"""The ``jobledger`` command line: a thin click layer over the library.

Each sub-command lives in a module of this package named for what it does
and is registered below.  Expected failures are ``click.ClickException``s
with a clear message naming the place (file, line, column).  Any of our
errors (``JobledgerError``) that a command lets through -- a request the
pool refused, a log that cannot be read -- becomes one line on stderr and
exit status 1, never a traceback.  A closed pipe (``jobledger ... | head``)
ends the command quietly and Ctrl-C with status 130 and nothing printed, in
every command (``Main``).
"""

from __future__ import annotations

import click

from jobledger import __version__

INTERRUPTED = 130          # 128 + SIGINT, as a shell reports a command Ctrl-C stopped


class Main(click.Group):
    """The group: an error of ours (or the OS's) that a command did not turn
    into a ``ClickException`` still ends as one line naming what failed,
    never a traceback (``params.one_line``); a closed pipe and Ctrl-C end it
    quietly (``output.quiet_pipe_exit``, status 130)."""

    def invoke(self, ctx):
        from jobledger.eventcore.errors import JobledgerError
        from jobledger.cli.params import one_line
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            from jobledger.cli.output import quiet_pipe_exit
            quiet_pipe_exit()
        except KeyboardInterrupt:
            ctx.exit(INTERRUPTED)
        except JobledgerError as exc:
            raise click.ClickException(one_line(exc)) from None
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename else ""
            raise click.ClickException(one_line(f"{where}{exc.strerror or one_line(exc)}")) from None
        except MemoryError:
            raise click.ClickException("out of memory") from None


@click.group(cls=Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="jobledger")
def main() -> None:
    """jobledger: an event-sourced, HTCondor-compatible job engine."""


# Sub-commands register here, one line each: main.add_command(module.command)
from jobledger.cli import journal as _journal  # noqa: E402

main.add_command(_journal.journal)
main.add_command(_journal.replay)
main.add_command(_journal.audit)
from jobledger.cli import watch as _watch  # noqa: E402

main.add_command(_watch.command)
from jobledger.cli import pool as _pool  # noqa: E402
from jobledger.cli import q as _q  # noqa: E402
from jobledger.cli import act as _act  # noqa: E402
from jobledger.cli import history as _history  # noqa: E402

main.add_command(_pool.pool)
main.add_command(_q.q)
main.add_command(_act.rm)
main.add_command(_act.hold)
main.add_command(_act.release)
main.add_command(_history.history)
from jobledger.cli import submit as _submit  # noqa: E402

main.add_command(_submit.submit)
from jobledger.cli import log as _log  # noqa: E402

main.add_command(_log.command)
from jobledger.cli import dag as _dag  # noqa: E402

main.add_command(_dag.dag)
from jobledger.cli import web as _web  # noqa: E402

main.add_command(_web.command)
