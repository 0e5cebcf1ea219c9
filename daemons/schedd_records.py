"""What a run writes to the journal moved to ``jobledger.eventcore.decide.runs`` (pure
decisions live in eventcore).  This name re-exports it for the modules not yet moved
with it (the folder moves of issue 24 remove it)."""

from jobledger.eventcore.decide.runs import *  # noqa: F401,F403
from jobledger.eventcore.decide.runs import __all__  # noqa: F401
