"""Authorization levels, ALLOW_*/DENY_* with wildcards, token scopes, QUEUE_SUPER_USERS."""

from __future__ import annotations

import pytest

from jobledger.daemons import authz
from jobledger.eventcore.errors import PermissionDenied


def config(**values):
    return values.get


@pytest.mark.parametrize("entry, identity, host, expected", [
    ("*", "alice@test.pool", "127.0.0.1", True),
    ("alice@test.pool", "alice@test.pool", "10.0.0.9", True),       # a user: any host
    ("alice@test.pool", "bob@test.pool", "127.0.0.1", False),
    ("*@test.pool", "bob@test.pool", "127.0.0.1", True),
    ("*@test.pool", "bob@other.pool", "127.0.0.1", False),
    ("alice/*", "alice@anywhere", "127.0.0.1", True),                # no domain: any domain
    ("alice", "alice@anywhere", "127.0.0.1", False),                 # no @, no /: a host name
    ("127.0.0.*", "anyone@x", "127.0.0.5", True),                    # a host: any user
    ("127.0.0.*", "anyone@x", "127.0.1.5", False),
    ("alice@test.pool/127.0.0.1", "alice@test.pool", "127.0.0.2", False),
    ("*/127.0.0.1", "carol@x", "127.0.0.1", True),
])
def test_entries_match_as_htcondor_reads_them(entry, identity, host, expected):
    assert authz.matches(entry, identity, host) is expected


def test_levels_are_implied_and_denials_win():
    get = config(ALLOW_READ="", ALLOW_WRITE="*@test.pool", ALLOW_ADMINISTRATOR="condor@test.pool",
                 DENY_WRITE="eve@test.pool")
    assert authz.holds("READ", "alice@test.pool", "127.0.0.1", get)          # WRITE implies READ
    assert authz.holds("WRITE", "condor@test.pool", "127.0.0.1", get)
    assert authz.holds("ADMINISTRATOR", "condor@test.pool", "127.0.0.1", get)
    assert not authz.holds("ADMINISTRATOR", "alice@test.pool", "127.0.0.1", get)
    assert not authz.holds("WRITE", "eve@test.pool", "127.0.0.1", get)
    assert not authz.holds("READ", "mallory@elsewhere", "127.0.0.1", get)


def test_a_token_scope_narrows_and_never_widens():
    get = config(ALLOW_READ="*", ALLOW_WRITE="*")
    assert authz.holds("READ", "a@b", "h", get, scopes=["READ"])
    assert not authz.holds("WRITE", "a@b", "h", get, scopes=["READ"])
    assert authz.holds("READ", "a@b", "h", get, scopes=["WRITE"])       # WRITE implies READ
    assert not authz.holds("ADMINISTRATOR", "a@b", "h", get, scopes=["ADMINISTRATOR"])   # not in ALLOW


def test_refusals_name_identity_command_and_level():
    get = config(ALLOW_READ="*", ALLOW_WRITE="*", DENY_WRITE="eve@*")
    with pytest.raises(PermissionDenied) as caught:
        authz.authorize("schedd", "submit", {}, "carol@x", "127.0.0.1", get, ["READ"])
    assert (caught.value.identity, caught.value.command, caught.value.permission) == \
        ("carol@x", "schedd submit", "WRITE")
    assert "limited to READ" in str(caught.value)
    with pytest.raises(PermissionDenied, match="DENY_WRITE names it"):
        authz.authorize("schedd", "act", {}, "eve@x", "127.0.0.1", get, None)
    with pytest.raises(PermissionDenied, match="needs DAEMON"):     # not in the table: DAEMON
        authz.authorize("schedd", "starter_outcome", {}, "carol@x", "127.0.0.1", get, None)
    assert authz.authorize("collector", "advertise", {"command": "UPDATE_STARTD_AD"}, "condor@x", "h",
                           config(ALLOW_DAEMON="condor@*"), None) == "ADVERTISE_STARTD"


def test_queue_super_users():
    assert authz.is_super_user("condor@test.pool", config())            # default: root, condor
    assert not authz.is_super_user("alice@test.pool", config())
    assert authz.is_super_user("alice@test.pool", config(QUEUE_SUPER_USERS="alice@test.pool"))
    assert not authz.is_super_user("alice@other", config(QUEUE_SUPER_USERS="alice@test.pool"))
