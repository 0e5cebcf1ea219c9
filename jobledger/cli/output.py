"""How every command writes its answer: the ``--json`` option and form, and a closed pipe.

``json_option`` is the one ``--json`` (also ``-json``, as condor_q spells it)
of the ``jobledger`` commands; ``echo_json`` writes a value in the one form
they share (indented, keys in their order, non-ASCII kept); ``ad_json`` turns
a ClassAd into plain JSON values (expressions that evaluate to nothing plain
become their text).

``quiet_pipe_exit`` is what a command does when the reader of its output
went away (``jobledger log --json | head``): nothing more on stdout or
stderr, exit status ``PIPE_STATUS``.  The ``jobledger`` group and the
``condor_*`` entry points both call it.
"""

from __future__ import annotations

import json
import os
import sys

import click

__all__ = ["json_option", "echo_json", "ad_json", "quiet_pipe_exit", "PIPE_STATUS"]

PIPE_STATUS = 0      # as the condor_* tools always did: the reader had what it wanted


def json_option(help_text: str = "The answer as JSON."):
    return click.option("--json", "-json", "as_json", is_flag=True, help=help_text)


def echo_json(value) -> None:
    click.echo(json.dumps(value, indent=1, ensure_ascii=False, default=str))


def ad_json(ad) -> dict:
    """A ClassAd's attributes, evaluated, as JSON values."""
    out = {}
    for key in ad.keys():
        value = ad.eval(key)
        out[key] = value if isinstance(value, (int, float, str, bool, list)) or value is None \
            else str(value)
    return out


def quiet_pipe_exit(status: int = PIPE_STATUS):
    """Leave after stdout's reader closed the pipe: whatever is still buffered goes to
    /dev/null (the interpreter's last flush would otherwise complain) and the process
    exits ``status`` with nothing said."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):       # stdout is not a file (a test runner's buffer)
        pass
    sys.exit(status)
