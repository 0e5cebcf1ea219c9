"""``from jobledger.personal import PersonalPool`` (htcondor2.personal's stand-in).  Re-exports only."""

from jobledger.daemons.client.personal import PersonalPool, PersonalPoolState, SetCondorConfig

__all__ = ["PersonalPool", "PersonalPoolState", "SetCondorConfig"]
