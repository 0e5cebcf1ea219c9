"""What a User/Project record command decides (eventcore.projections.userrecs, pure), as
HTCondor's schedd (act_on_user, act_on_project, command_act_on_user_ads at 7491a14) does."""

from __future__ import annotations

from jobledger.eventcore.codecs.journal import record_from_payload, record_to_payload
from jobledger.eventcore.projections.userrecs import Command, UserRecFold, decide
from jobledger.eventcore.records import USERREC_JOB

from tests.journal.schema_check import check_payload

DOMAIN = "pool.example"


def run(fold: UserRecFold, cmd: Command, jobs: set[str] = frozenset(), projects: set[str] = frozenset()):
    implicit = set(jobs) - set(fold.records["user"])
    outcome = decide(fold, cmd, DOMAIN, implicit,
                     lambda kind, name: name in (projects if kind == "project" else jobs))
    for record in outcome.records:
        payload = record_to_payload(record)
        check_payload("userrec", payload)
        again = record_from_payload("userrec", USERREC_JOB, payload)
        assert again == record
        fold.apply(payload)
    return outcome


def test_add_names_the_user_at_the_uid_domain_and_enable_disable_round_trip():
    fold = UserRecFold()
    out = run(fold, Command("add", "user", ("alice",)))
    assert out.result == {"NumAds": 1, "Result": 0}
    ad = fold.records["user"]["alice@pool.example"]
    assert ad == {"MyType": '"Owner"', "User": '"alice@pool.example"', "Owner": '"alice"',
                  "OsUser": '"alice"', "Enabled": "1"}
    run(fold, Command("disable", "user", ("alice",), reason="quota"))
    assert fold.disabled_reason("alice@pool.example") == "quota"
    run(fold, Command("enable", "user", ("alice@pool.example",)))
    assert fold.disabled_reason("alice@pool.example") is None
    assert "DisableReason" not in fold.records["user"]["alice@pool.example"]


def test_an_unknown_name_fails_the_whole_command():
    fold = UserRecFold()
    run(fold, Command("add", "user", ("alice",)))
    out = run(fold, Command("disable", "user", ("alice", "nobody")))
    assert out.result == {"NumAds": 1, "Result": 2} and out.records == []
    assert fold.disabled_reason("alice@pool.example") is None


def test_removing_a_user_with_jobs_disables_it_and_a_busy_project_is_refused():
    fold = UserRecFold()
    run(fold, Command("add", "user", ("bob",)))
    out = run(fold, Command("remove", "user", ("bob",)), jobs={"bob@pool.example"})
    assert out.result["NumAds"] == 1 and [r.op for r in out.records] == ["disable"]
    assert fold.records["user"]["bob@pool.example"]["Enabled"] == "0"
    run(fold, Command("remove", "user", ("bob",)))
    assert fold.records["user"] == {}

    run(fold, Command("add", "project", ("chem", "bio")))
    out = run(fold, Command("remove", "project", constraint="true"), projects={"chem"})
    assert out.result["Result"] == 0 and out.result["NumAds"] == 1
    assert "Project chem is in use" in out.result["ErrorString"]
    assert set(fold.records["project"]) == {"chem"}
    out = run(fold, Command("remove", "project", ("chem",)), projects={"chem"})
    assert out.result["Result"] == 16 and out.result["NumAds"] == 0 and out.records == []


def test_an_implicit_user_is_journaled_before_it_changes():
    fold = UserRecFold()
    out = run(fold, Command("disable", "user", ("carol",), reason="x"), jobs={"carol@pool.example"})
    assert [r.op for r in out.records] == ["add", "disable"]
    assert fold.disabled_reason("carol@pool.example") == "x"


def test_edit_ignores_reserved_attributes_and_deletes():
    fold = UserRecFold()
    run(fold, Command("add", "user", ("dave",)))
    ads = ({"User": '"dave"', "MaxJobsRunning": "4", "NumIdle": "3", "Enabled": "0"},)
    out = run(fold, Command("edit", "user", ads=ads))
    assert out.result["NumAttributesSet"] == 1 and "2 were reserved attributes" in out.result["Warning"]
    assert fold.records["user"]["dave@pool.example"]["MaxJobsRunning"] == "4"
    assert fold.records["user"]["dave@pool.example"]["Enabled"] == "1"
    run(fold, Command("edit", "user", ads=({"Requirements": 'Owner == "dave"', "MaxJobsRunning": "delete"},)))
    assert "MaxJobsRunning" not in fold.records["user"]["dave@pool.example"]


def test_a_command_ad_without_a_name_is_refused():
    out = run(UserRecFold(), Command("edit", "user", ads=({"X": "1"},)))
    assert out.result["Result"] == 1 and out.result["ErrorString"] == "Dont know what user to act on."


def test_levels_are_htcondors():
    """schedd.cpp registers QUERY_USERREC_ADS at READ and every change at ADMINISTRATOR."""
    from jobledger.daemons.authz import command_level
    assert command_level("schedd", "query_userrec_ads") == "READ"
    for cmd in ("add_userrec", "enable_userrec", "disable_userrec", "edit_userrec", "delete_userrec"):
        assert command_level("schedd", cmd) == "ADMINISTRATOR"
