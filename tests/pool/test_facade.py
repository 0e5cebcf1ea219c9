"""The pool half of ``import jobledger as htcondor``: names and signatures as in htcondor2."""

from __future__ import annotations

import inspect

import pytest

import jobledger as htcondor
import jobledger.personal as personal

htcondor2 = pytest.importorskip("htcondor2")
import htcondor2.personal as htcondor2_personal  # noqa: E402

POOL_NAMES = ["Schedd", "Collector", "SubmitResult", "JobAction", "JobStatus", "QueryOpt", "QueryOpts",
              "AdType", "AdTypes", "DaemonType", "DaemonTypes", "TransactionFlag", "TransactionFlags",
              "SubmitMethod", "DaemonCommand", "DaemonCommands", "LogLevel", "SubsystemType",
              "DrainType", "DrainTypes", "VacateType", "CompletionType", "param", "reload_config",
              "version", "platform", "send_command", "enable_debug", "disable_debug", "enable_log",
              "log", "set_subsystem", "HTCondorException", "classad"]


def params(fn) -> list[str]:
    return list(inspect.signature(fn).parameters)


@pytest.mark.oracle
@pytest.mark.parametrize("name", POOL_NAMES)
def test_name_exists_in_both(name):
    assert hasattr(htcondor2, name) and hasattr(htcondor, name)


@pytest.mark.oracle
@pytest.mark.parametrize("cls, methods", [
    ("Schedd", ["__init__", "query", "act", "edit", "history", "reschedule", "spool", "retrieve"]),
    ("Collector", ["__init__", "query", "locate", "locateAll", "advertise", "directQuery"]),
])
def test_method_parameters_match(cls, methods):
    for method in methods:
        ours = params(getattr(getattr(htcondor, cls), method))
        theirs = params(getattr(getattr(htcondor2, cls), method))
        assert ours == theirs, (cls, method)


@pytest.mark.oracle
def test_submit_takes_htcondor2_parameters_plus_v1_ad_results():
    assert params(htcondor.Schedd.submit)[:6] == params(htcondor2.Schedd.submit)


@pytest.mark.oracle
def test_personal_pool_matches():
    for method in ["__init__", "start", "stop", "detach", "initialize", "get_config_val", "use_config",
                   "run_command"]:
        assert params(getattr(personal.PersonalPool, method)) == \
            params(getattr(htcondor2_personal.PersonalPool, method)), method
    assert [s.name for s in personal.PersonalPoolState] == [s.name for s in htcondor2_personal.PersonalPoolState]


def test_version_and_platform_shapes():
    assert htcondor.version().startswith("$CondorVersion: ") and htcondor.version().endswith(" $")
    assert htcondor.platform().startswith("$CondorPlatform: ")


def test_debug_log(capsys, tmp_path, monkeypatch):
    htcondor.set_subsystem("tool")
    htcondor.enable_debug()
    try:
        htcondor.log(htcondor.LogLevel.Always, "hello from a script")
    finally:
        htcondor.disable_debug()
    assert "hello from a script" in capsys.readouterr().err
    htcondor.param["TOOL_LOG"] = str(tmp_path / "tool.log")
    try:
        htcondor.enable_log()
        htcondor.log(htcondor.LogLevel.Always, "to the file")
    finally:
        htcondor.disable_debug()
        del htcondor.param["TOOL_LOG"]
    assert "to the file" in (tmp_path / "tool.log").read_text()
    with pytest.raises(TypeError):
        htcondor.log(htcondor.LogLevel.Always, 5)
