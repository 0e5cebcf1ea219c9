"""``import htcondor2._schedd``'s names, for programs that import from the private
module (as HTCondor's own tests do).  Re-exports only."""

from jobledger.daemons.client.api import Schedd, job_spec_hack

__all__ = ["Schedd", "job_spec_hack"]
