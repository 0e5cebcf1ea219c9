"""Our enums carry exactly htcondor2's names and values."""

from __future__ import annotations

import pytest

from jobledger.eventcore import enums

htcondor2 = pytest.importorskip("htcondor2")

NAMES = ["JobAction", "QueryOpt", "TransactionFlag", "AdType", "DaemonType", "SubmitMethod",
         "DaemonCommand", "LogLevel", "SubsystemType", "DrainType", "VacateType", "CompletionType"]


@pytest.mark.oracle
@pytest.mark.parametrize("name", NAMES)
def test_members_match_htcondor2(name):
    ours = {k: int(v) for k, v in getattr(enums, name).__members__.items()}
    theirs = {k: int(v) for k, v in getattr(htcondor2, name).__members__.items()}
    assert ours == theirs


@pytest.mark.oracle
@pytest.mark.parametrize("plural", ["AdTypes", "DaemonTypes", "QueryOpts", "TransactionFlags",
                                    "DrainTypes", "DaemonCommands"])
def test_plural_aliases(plural):
    assert getattr(enums, plural).__name__ == getattr(htcondor2, plural).__name__


@pytest.mark.oracle
@pytest.mark.parametrize("mytype", ["Machine", "Scheduler", "DaemonMaster", "Collector",
                                    "Negotiator", "Generic", "Accounting", "Nope", "StartD"])
def test_from_mytype(mytype):
    ours = enums.AdType.from_MyType(mytype)
    theirs = htcondor2.AdType.from_MyType(mytype)
    assert (None if ours is None else int(ours)) == (None if theirs is None else int(theirs))
