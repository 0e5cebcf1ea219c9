"""Named points where a test may make threads take turns (deterministic race tests).

Code whose correctness depends on how two threads interleave marks the places
that matter with ``point("part.what")``: a job read and decided on
(``act.chosen``), about to be committed (``act.append``), a run's EXECUTE about
to be appended (``start.before-execute``), and so on.  In production no hook
is installed and a point costs one global read and a comparison.  A test
installs one (``install``; ``tests/sequencer.py`` has a ``Sequencer`` that
lets each named point pass only in a given order), so a race that a stress
loop found "1 round in 20" is one test that forces its interleaving every
time.

Pure: a point only calls the installed hook; waiting is the hook's business.
"""

from __future__ import annotations

from typing import Callable

__all__ = ["point", "install", "uninstall", "POINTS"]

# Every point the code marks, and where (a hook may refuse names not listed here,
# so a renamed point cannot make a race test pass by never being reached).
POINTS = {
    "act.chosen": "Actions.act read the jobs it acts on (daemons.schedd.act)",
    "act.append": "Actions.act decided, before its records are committed",
    "act.committed": "Actions.act's records were committed",
    "policy.chosen": "Policy.apply read the job its verdict is carried out on (daemons.schedd.policy)",
    "policy.append": "Policy.apply decided on a job, before its records are committed",
    "start.before-execute": "a run's starter is up, before its EXECUTE is appended "
                            "(daemons.schedd.match)",
    "start.after-execute": "a run's EXECUTE was appended, or refused",
    "outcome.append": "Runs decided how a run ended, before its records are committed",
}

_hook: Callable[[str], None] | None = None


def point(name: str) -> None:
    """Mark the named point (a no-op unless a test installed a hook)."""
    if _hook is not None:
        _hook(name)


def install(hook: Callable[[str], None]) -> None:
    """Call ``hook(name)`` at every point from now on (tests)."""
    global _hook
    _hook = hook


def uninstall() -> None:
    global _hook
    _hook = None
