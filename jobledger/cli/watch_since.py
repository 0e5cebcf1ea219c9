"""``jobledger watch --since POSITION``: the schedd's stream of job events (``Schedd.watch``).

Prints every event of the selected jobs after journal position POSITION as the
schedd commits it: the user-log record, after a ``--- position N`` line, or
with ``--json`` one object a line (``position``, ``cluster``, ``proc``,
``type``, ``timestamp`` and the event's attributes).  The last position
printed resumes the stream: ``--since`` it again and nothing is missed or
repeated, whatever happened to the schedd meanwhile (the stream itself
reconnects after a restart).  ``--exit`` stops once the condition holds for
the jobs seen, and ``--timeout`` then gives up after that many seconds (exit
status 2); without ``--exit``, ``--timeout`` ends the stream after that long.
"""

from __future__ import annotations

import json
import signal
import sys

import click

from jobledger.eventcore.errors import HTCondorException
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.projections.jobstate import apply_event
from jobledger.tracking.jobevent import to_binding_value


class _TimedOut(Exception):
    pass


def _json_value(value):
    value = to_binding_value(value)
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def _line(event) -> str:
    data = {"position": event.position, "cluster": event.cluster, "proc": event.proc,
            "type": event.type.name, "timestamp": event.timestamp}
    for key, value in event.items():
        data.setdefault(key, _json_value(value))
    return json.dumps(data)


def follow_since(schedd, constraint: str | None, since: int, as_json: bool, condition,
                 timeout: float | None) -> int:
    """Print the stream until ``condition(states)`` holds (None: until interrupted);
    the exit status (0, or 2 when ``timeout`` passed first)."""
    try:
        stream = schedd.watch(constraint, since=since)
    except HTCondorException as exc:
        raise click.ClickException(str(exc))
    states: dict = {}

    def alarm(*_):
        raise _TimedOut()
    previous = signal.signal(signal.SIGALRM, alarm) if timeout is not None else None
    if timeout is not None:
        signal.setitimer(signal.ITIMER_REAL, max(timeout, 0.001))
    try:
        for event in stream:
            if as_json:
                click.echo(_line(event))
            else:
                click.echo(f"--- position {event.position}")
                click.echo(event.raw_text, nl=False)
            sys.stdout.flush()
            job = JobId(event.cluster, event.proc)
            if event.proc >= 0:
                states[job] = apply_event(states.get(job), event).state
            if condition is not None and states and condition(states):
                return 0
    except _TimedOut:
        if condition is None:       # only following for a while: done
            return 0
        click.echo(f"--since {since}: the condition did not hold within {timeout} s "
                   f"(resume with --since {stream.position})", err=True)
        return 2
    except HTCondorException as exc:
        raise click.ClickException(f"{exc} (resume with --since {stream.position})")
    finally:
        if timeout is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        stream.close()
    return 0
