"""The evaluation environment: where "now" and random numbers come from.

eventcore is pure, so it never reads the clock or draws random numbers by
itself.  ``ENV`` starts with neither; whoever owns the process configures it:

    from jobledger.eventcore.classad import configure
    configure(clock=time.time, rng=random.Random())

``jobledger.classad`` (the classad2 stand-in) does exactly that when it is
imported; daemons that evaluate ClassAds do it at start-up; tests can pass a
fixed clock and a seeded generator.  Without a clock, ``time()``,
``CurrentTime``, ``currentTime()``, ``absTime()``, ``dayTime()`` and
``formatTime()`` make the evaluation fail (``ClassAdEvalError``); without a
generator, ``random()`` does.
"""

from __future__ import annotations

from .values import EvalFailure


class Environment:
    """``clock()`` -> epoch seconds (float); ``rng`` has ``random()`` and ``randrange(n)``."""

    __slots__ = ("clock", "rng")

    def __init__(self, clock=None, rng=None):
        self.clock = clock
        self.rng = rng

    def now(self) -> float:
        if self.clock is None:
            raise EvalFailure("no clock configured for ClassAd evaluation "
                              "(eventcore.classad.configure(clock=...))")
        return self.clock()

    def random(self) -> float:
        if self.rng is None:
            raise EvalFailure("no random generator configured for ClassAd evaluation "
                              "(eventcore.classad.configure(rng=...))")
        return self.rng.random()

    def randrange(self, n: int) -> int:
        if self.rng is None:
            raise EvalFailure("no random generator configured for ClassAd evaluation")
        return self.rng.randrange(n)


ENV = Environment()


def configure(clock=None, rng=None) -> Environment:
    """Set the process-wide clock and/or random generator; returns ``ENV``."""
    if clock is not None:
        ENV.clock = clock
    if rng is not None:
        ENV.rng = rng
    return ENV
