"""jobledger: an event-sourced, HTCondor-compatible job engine.

``import jobledger as htcondor`` stands in for ``import htcondor2 as htcondor``.
This module only re-exports; the code lives in eventcore/, daemons/ and
tracking/.  tests/test_exports.py pins the public names.
"""

from eventcore.errors import HTCondorException, JobledgerError

__version__ = "0.1.0"

__all__ = [
    "HTCondorException",
    "JobledgerError",
    "__version__",
]
