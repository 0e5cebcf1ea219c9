"""The argument scanner every condor_* command shares.

HTCondor's tools take single-dash long flags that may be shortened to a
prefix (``-con`` for ``-constraint``), a ``--`` spelling too, and flags with
colon qualifiers (``-af:jh``).  ``Args`` walks argv once; each command asks
``flag(name, least)`` for the flags it knows and ``value()`` for their
arguments.  ``Usage`` carries a message and the exit status; ``entry`` turns
it, and every error we raise on purpose, into text on stderr and that status:
no traceback reaches the user.

``-help`` is ``raise Help()`` in every command; where the usage text goes
and the exit status are the tool's own, as HTCondor's tools differ: most
print it on stdout and exit 0 (condor_submit, condor_q, condor_history,
condor_qedit, condor_submit_dag, condor_watch_q), others on stderr
(condor_rm/hold/release, condor_status, condor_wait, condor_tail,
condor_userlog, condor_version, condor_off/on/restart/reschedule), and
condor_config_val on stderr with exit status 1.  Each ``entry`` says which.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from jobledger.eventcore.errors import JobledgerError


class Usage(Exception):
    """Bad command line: print ``message`` (and the usage text) on stderr, exit ``status``."""

    def __init__(self, message: str = "", status: int = 1, show_usage: bool = True):
        super().__init__(message)
        self.message = message
        self.status = status
        self.show_usage = show_usage


class Help(Exception):
    """``-help``: the usage text where the tool prints it (``entry``'s ``help_to``)."""


class Failed(Exception):
    """The command ran but failed: ``message`` on stderr (when given), exit ``status``."""

    def __init__(self, message: str = "", status: int = 1):
        super().__init__(message)
        self.message = message
        self.status = status


def dash_prefix(arg: str, name: str, least: int = 1) -> tuple[bool, str | None]:
    """Does ``arg`` (``-name``, ``--name``, or a prefix of at least ``least``
    characters, optionally ``:qualifiers``) name the flag ``name``?  Returns
    (matched, qualifiers after the colon or None)."""
    if not arg.startswith("-") or arg == "-":
        return False, None
    word = arg[2:] if arg.startswith("--") else arg[1:]
    word, colon, qual = word.partition(":")
    if len(word) < max(least, 1) or not name.startswith(word.lower()):
        return False, None
    return True, (qual if colon else None)


class Args:
    """One pass over argv: ``for arg in args: if args.flag("constraint", 3): ...``."""

    def __init__(self, argv: list[str], prog: str):
        self.argv = list(argv)
        self.prog = prog
        self.index = -1
        self.current = ""
        self.qualifier: str | None = None

    def __iter__(self):
        while self.index + 1 < len(self.argv):
            self.index += 1
            self.current = self.argv[self.index]
            yield self.current

    def flag(self, name: str, least: int = 1) -> bool:
        matched, self.qualifier = dash_prefix(self.current, name, least)
        return matched

    def value(self, what: str = "another argument") -> str:
        """The argument after the current flag (a usage error when there is none)."""
        if self.index + 1 >= len(self.argv):
            raise Usage(f"{self.prog}: {self.current} requires {what}")
        self.index += 1
        return self.argv[self.index]

    def constraint(self) -> str:
        """The ClassAd expression after ``-constraint``, checked before any daemon is asked:
        every command says a bad one the same way (``constraint_problem``), exit status 1."""
        text = self.value("a constraint expression")
        problem = constraint_problem(text)
        if problem:
            shown = text if len(text) <= 80 else text[:80] + "..."
            raise Failed(f"Error: {self.prog}: invalid constraint ({shown}): {problem}")
        return text

    def int_value(self) -> int:
        flag = self.current
        text = self.value()
        try:
            return int(text)
        except ValueError:
            raise Usage(f"{self.prog}: {flag} requires an integer, not {text!r}") from None

    def words(self) -> list[str]:
        """Arguments after the current one up to the next that starts with '-'."""
        out = []
        while self.index + 1 < len(self.argv) and not self.argv[self.index + 1].startswith("-"):
            self.index += 1
            out.append(self.argv[self.index])
        return out

    def is_flag(self) -> bool:
        return self.current.startswith("-") and self.current != "-"

    def unknown(self) -> Usage:
        return Usage(f"{self.prog}: unknown argument {self.current}")


def constraint_problem(text: str) -> str | None:
    """Why ``text`` is not a ClassAd expression (the parser's words and column), or None."""
    from jobledger.eventcore.classad import parse_expr
    from jobledger.eventcore.errors import ClassAdError
    try:
        parse_expr(text)
    except ClassAdError as exc:
        message = " ".join(str(getattr(exc, "message", exc)).split())
        column = getattr(exc, "column", None)
        return f"{message[:200]}" + (f" at column {column}" if column else "")
    except RecursionError:
        return "nested too deeply"
    return None


def entry(prog: str, run: Callable[[list[str]], int | None], usage_text: str,
          help_to: str = "stdout", help_status: int = 0) -> Callable[[], None]:
    """A console-script ``main`` around ``run(argv)``: usage errors print the
    usage text, our errors one line, and the process exits with the status.
    ``Help`` prints the usage text on ``help_to`` ("stdout" or "stderr") and
    exits ``help_status``, as the HTCondor tool of that name does."""
    if help_to not in ("stdout", "stderr"):
        raise ValueError(f"help_to must be stdout or stderr, not {help_to!r}")

    def main(argv: list[str] | None = None) -> None:
        args = sys.argv[1:] if argv is None else argv
        try:
            status = run(args) or 0
        except Help:
            print(usage_text, end="", file=getattr(sys, help_to))
            status = help_status
        except Usage as exc:
            if exc.message:
                print(exc.message, file=sys.stderr)
            if exc.show_usage:
                print(usage_text, end="", file=sys.stderr)
            status = exc.status
        except BrokenPipeError:
            from jobledger.cli.output import quiet_pipe_exit
            quiet_pipe_exit()
        except Failed as exc:
            if exc.message:
                print(exc.message, file=sys.stderr)
            status = exc.status
        except (JobledgerError, OSError) as exc:
            print(f"ERROR: {_one_line(exc)}", file=sys.stderr)
            status = 1
        except KeyboardInterrupt:
            status = 130
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            from jobledger.cli.output import quiet_pipe_exit
            quiet_pipe_exit(status)
        sys.exit(status)

    main.prog = prog
    return main


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    return " ".join(str(exc).split()) or type(exc).__name__


def show_version() -> None:
    """``-version``: the version and platform lines, as every HTCondor tool prints them;
    the tool then exits 0 (``Failed(status=0)``)."""
    from jobledger.daemons.client.api import platform, version
    print(f"{version()}\n{platform()}")
    raise Failed(status=0)
