"""The ad evaluator moved to ``jobledger.eventcore.adwire``: the pure decisions of the
schedd (``jobledger.eventcore.decide``) need it below the daemons.  This name re-exports
it for the modules not yet moved with it (the folder moves of issue 24 remove it)."""

from jobledger.eventcore.adwire import *  # noqa: F401,F403
from jobledger.eventcore.adwire import __all__  # noqa: F401
