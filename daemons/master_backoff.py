"""How long the master waits before starting a daemon that exited again (pure).

HTCondor's condor_master (masterDaemon.cpp, ``daemon::NextStart``): after the
n-th failure in a row (n counted from 0) the wait is
``MASTER_BACKOFF_CONSTANT + ceil(MASTER_BACKOFF_FACTOR ** n)`` seconds, never
more than ``MASTER_BACKOFF_CEILING``; a daemon that then stays up for
``MASTER_RECOVER_FACTOR`` seconds has recovered and its count goes back to 0.
Each knob has a per-daemon form, ``MASTER_<NAME>_BACKOFF_CONSTANT`` and so on,
read first.  As HTCondor's ``param_integer(name, default, 1)``, a constant,
ceiling or recover time below 1 counts as 1; a factor that is not above 0 is 2.0.
A restart asked for by command (condor_restart, condor_on) waits 1 s and
starts the count again.
"""

from __future__ import annotations

import math

import attrs

DEFAULTS = {"BACKOFF_CONSTANT": 9, "BACKOFF_FACTOR": 2.0, "BACKOFF_CEILING": 3600,
            "RECOVER_FACTOR": 300}
BY_COMMAND_DELAY = 1


@attrs.define
class Backoff:
    """One daemon's restart policy and its failures in a row (HTCondor's ``restarts``)."""

    constant: int = 9
    factor: float = 2.0
    ceiling: int = 3600
    recover: int = 300
    failures: int = 0

    def delay(self) -> int:
        """Seconds to wait before the next start after one more failure."""
        try:
            seconds = self.constant + math.ceil(self.factor ** self.failures)
        except OverflowError:
            return self.ceiling
        return self.ceiling if seconds > self.ceiling or seconds < 0 else seconds

    def failed(self) -> int:
        """A failure: the wait before the next start (and one more in the count)."""
        seconds = self.delay()
        self.failures += 1
        return seconds

    def recovered(self, up_for: float) -> bool:
        """Whether a daemon up for ``up_for`` seconds since its restart has recovered
        (and its count was reset)."""
        if self.failures and up_for >= self.recover:
            self.failures = 0
            return True
        return False


def _number(text: str | None, convert, default):
    if text is None or not str(text).strip():
        return default
    try:
        return convert(str(text).strip())
    except ValueError:
        try:
            return convert(float(str(text).strip()))
        except ValueError:
            return default


def backoff_for(config, name: str) -> Backoff:
    """The policy of daemon ``name`` (``config(knob)`` gives a knob's text or None)."""
    values = {}
    for knob, default in DEFAULTS.items():
        convert = float if knob == "BACKOFF_FACTOR" else int
        general = _number(config(f"MASTER_{knob}"), convert, default)
        if knob == "BACKOFF_FACTOR" and general <= 0:
            general = default
        own = _number(config(f"MASTER_{name.upper()}_{knob}"), convert, general)
        if knob == "BACKOFF_FACTOR" and own <= 0:
            own = general
        values[knob] = own
    factor = values["BACKOFF_FACTOR"]
    return Backoff(constant=max(1, values["BACKOFF_CONSTANT"]), factor=factor,
                   ceiling=max(1, values["BACKOFF_CEILING"]), recover=max(1, values["RECOVER_FACTOR"]))
