"""The v1 bindings' names (``import htcondor`` of HTCondor 24.0) beside htcondor2's, from
one implementation: what differs is pinned here against what the 24.0 wheel does."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import jobledger
import jobledger.v1 as v1
from jobledger.daemons.config_files import Param, ParamV1
from jobledger.aliases import alias_path

pytest.importorskip("htcondor2")
import htcondor2  # noqa: E402


def _conf(tmp_path, monkeypatch, text):
    conf = tmp_path / "condor_config"
    conf.write_text(text)
    monkeypatch.setenv("CONDOR_CONFIG", str(conf))
    return conf


def test_v2_param_lists_only_what_it_answers(tmp_path, monkeypatch):
    """Every listed name is readable (ctrl_bps_htcondor does ``dict(param.items())`` at import)."""
    _conf(tmp_path, monkeypatch, "EMPTY_KNOB =\nHOLLOW = $(NOT_DEFINED_ANYWHERE)\nFULL = 3\n")
    p = Param()
    names = list(p)
    assert "FULL" in names and "HOLLOW" not in names and "EMPTY_KNOB" not in names
    assert len(dict(p.items())) == len(p) == len(names)


def test_v2_param_iteration_matches_htcondor2(tmp_path, monkeypatch):
    """The names htcondor2 itself leaves out of an empty configuration (ADSTASH_READ_POOLS =
    $(CONDOR_HOST) with no CONDOR_HOST) are left out by us too."""
    conf = _conf(tmp_path, monkeypatch, "")
    theirs = subprocess.run(
        [sys.executable, "-c", "import htcondor2; print('\\n'.join(htcondor2.param))"],
        env={**os.environ, "CONDOR_CONFIG": str(conf)}, capture_output=True, text=True, timeout=120)
    listed = set(theirs.stdout.split())
    ours = set(Param())
    for name in ("ADSTASH_READ_POOLS", "FLOCK_COLLECTOR_HOSTS", "SCHEDD_NAME"):
        assert name not in listed and name not in ours
    assert "DAGMAN_MAX_JOBS_IDLE" in listed and "DAGMAN_MAX_JOBS_IDLE" in ours


def test_v1_param_answers_the_raw_text_of_a_hollow_name(tmp_path, monkeypatch):
    """The 24.0 wheel lists a name whose value expands to nothing and answers its raw text
    (param['ADSTASH_READ_POOLS'] == '$(CONDOR_HOST)'), while ``in`` says False; a name with
    no raw value at all (SCHEDD_NAME) is neither listed nor readable."""
    _conf(tmp_path, monkeypatch, "EMPTY_KNOB =\nHOLLOW = $(NOT_DEFINED_ANYWHERE)\nFULL = 3\n")
    p = ParamV1(Param())
    names = list(p)
    assert "HOLLOW" in names and "FULL" in names and "EMPTY_KNOB" not in names
    assert p["HOLLOW"] == "$(NOT_DEFINED_ANYWHERE)"
    assert "HOLLOW" not in p and "FULL" in p
    assert p["FULL"] == "3" and p["DAGMAN_MAX_JOBS_IDLE"] == 1000
    with pytest.raises(KeyError):
        p["EMPTY_KNOB"]
    assert all(p[name] is not None for name in names)   # every listed name is readable
    p["SET_HERE"] = "x"
    assert p["SET_HERE"] == "x"


def test_v1_enums_print_their_names():
    assert str(v1.DaemonTypes.Schedd) == "Schedd" and f"{v1.JobAction.Hold}" == "Hold"
    assert str(jobledger.DaemonTypes.Schedd) == str(htcondor2.DaemonTypes.Schedd) == "3"
    assert v1.DaemonTypes.Schedd == jobledger.DaemonType.Schedd == 3
    assert v1.DaemonTypes.names["Schedd"] is v1.DaemonTypes.Schedd
    assert v1.DaemonTypes.values[3] is v1.DaemonTypes.Schedd
    # v1's own numbers where they differ from htcondor2's
    assert int(v1.DaemonCommands.DaemonsOn) == 455 and int(v1.VacateTypes.Fast) == 2
    assert str(v1.JobStatus.RUNNING) == "2"        # an IntEnum in v1 as well


def test_v1_alias_folder_makes_htcondor_and_classad_resolve_to_jobledger():
    code = ("import htcondor, classad, htcondor.dags; "
            "print(htcondor.__name__, classad.__name__, htcondor.dags.__name__, htcondor.DaemonTypes.Schedd, "
            "classad.parseOne('[a = 1]')['a'])")
    env = {**os.environ, "PYTHONPATH": str(alias_path("v1"))}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["jobledger.v1", "jobledger.v1.classad", "jobledger.dags", "Schedd", "1"], out.stderr
    code2 = "import htcondor2, classad2; print(htcondor2.__name__, classad2.__name__)"
    env = {**os.environ, "PYTHONPATH": str(alias_path("v2"))}
    out = subprocess.run([sys.executable, "-c", code2], env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["jobledger", "jobledger.classad"], out.stderr
    shown = subprocess.run([sys.executable, "-m", "jobledger.aliases", "v1"], capture_output=True, text=True,
                           timeout=120)
    assert shown.stdout.strip() == str(alias_path("v1"))
    bad = subprocess.run([sys.executable, "-m", "jobledger.aliases", "v3"], capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode == 2 and "usage" in bad.stderr and not bad.stdout


def test_v1_enums_are_accepted_where_htcondor2s_are(pool):
    coll = v1.Collector()
    ad = coll.locate(v1.DaemonTypes.Schedd)
    assert ad["MyType"] == "Scheduler"
    schedd = v1.Schedd(ad)
    result = schedd.act(v1.JobAction.Hold, "ClusterId == 999999")
    assert result["TotalJobAds"] >= 0
    with pytest.raises(TypeError):
        coll.locate(v1.AdTypes.Schedd)       # an ad type is not a daemon type


def test_secman_ping(pool):
    coll = v1.Collector()
    ad = coll.locate(v1.DaemonTypes.Schedd)
    with v1.SecMan() as secman:
        answer = secman.ping(ad)
        assert answer["AuthCommand"] == 60011 and answer["Authentication"] == "YES"
        assert answer["AuthorizationSucceeded"] is True      # for DC_NOP too, as HTCondor's ping ad
        assert answer["MyRemoteUserName"].split("@")[0]
        assert answer["RemoteVersion"].startswith("$CondorVersion:")
        assert secman.ping(ad["MyAddress"], "WRITE")["Command"] == 60021
        with pytest.raises(v1.HTCondorValueError):
            secman.ping(ad, "NO_SUCH_COMMAND")
        with pytest.raises(v1.HTCondorIOError):
            secman.ping(ad["MyAddress"] + "-gone")


def test_a_finished_jobs_log_carries_the_toe_tag(pool, tmp_path):
    """As HTCondor's shadow writes it: the job's termination ends with its ToE tag, which the
    v1 reader shows as the ToE sub-ad and htcondor2's reader leaves out."""
    from tests.pool.conftest import wait_until
    log = tmp_path / "toe.log"
    sub = v1.Submit({"executable": "/bin/sh", "arguments": "\"-c 'exit 3'\"", "log": str(log)})
    cluster = v1.Schedd().submit(sub).cluster()

    def terminated():
        if not log.exists():
            return None
        events = [e for e in v1.JobEventLog(str(log)).events(stop_after=0)
                  if e.cluster == cluster and e.type == v1.JobEventType.JOB_TERMINATED]
        return events[0] if events else None
    event = wait_until(terminated, 120, what="the job's termination in its log")
    toe = event["ToE"]
    assert (toe["How"], toe["Who"], toe["HowCode"], toe["ExitCode"], toe["ExitBySignal"]) == (
        "OF_ITS_OWN_ACCORD", "itself", 0, 3, False)
    assert abs(toe["When"] - event.timestamp) <= 1
    assert "\tJob terminated of its own accord at " in log.read_text() and " with exit-code 3.\n" in log.read_text()
    plain = [e for e in jobledger.JobEventLog(str(log)).events(stop_after=0)
             if e.type == jobledger.JobEventType.JOB_TERMINATED]
    assert "ToE" not in plain[0] and plain[0]["ReturnValue"] == 3
