"""condor_config_val -writeconfig (-write:up FILE): the settings the files made, written
so that reading the file back gives the same values; a macro naming itself takes its
value so far, as HTCondor reads `PATH = $(PATH) more`."""

from __future__ import annotations

import pytest

from jobledger.daemons.config_files import param, reload_config
from jobledger.condor_cli import config
from tests.condor_cli.conftest import run


@pytest.fixture
def condor_config(tmp_path, monkeypatch):
    path = tmp_path / "condor_config"
    path.write_text("LOCAL_DIR = /srv/pool\nFOO = one\nFOO = $(FOO) two\nBAR = <$(bar)> $(FOO)\n"
                    "COLLECTOR_HOST = $(CONDOR_HOST):0\nSCRIPT @=end\nline 1\nline 2\n@end\n")
    monkeypatch.setenv("CONDOR_CONFIG", str(path))
    yield path
    monkeypatch.delenv("CONDOR_CONFIG")
    reload_config()


def test_a_macro_naming_itself_takes_its_value_so_far(condor_config):
    reload_config()
    assert param["FOO"] == "one two"
    assert param["BAR"] == "<> one two"          # BAR had no value: its own reference is empty
    assert param["COLLECTOR_HOST"] == ":0"       # CONDOR_HOST has no default, as in HTCondor


def test_write_up_writes_what_the_files_set_and_reads_back_the_same(condor_config, tmp_path, monkeypatch):
    out = tmp_path / "written"
    ran = run(config.config_val_main, "-write:up", str(out))
    assert ran.status == 0 and ran.err == ""
    text = out.read_text()
    assert "LOCAL_DIR = /srv/pool" in text and "FOO = one two" in text
    assert "NEGOTIATOR_INTERVAL" not in text     # built-in defaults are not written
    assert "SCRIPT @=end\nline 1\nline 2\n@end" in text
    before = {name: param[name] for name in ("LOCAL_DIR", "FOO", "BAR", "COLLECTOR_HOST", "SCRIPT")}
    monkeypatch.setenv("CONDOR_CONFIG", str(out))
    reload_config()
    assert {name: param[name] for name in before} == before


def test_write_to_stdout_and_an_unwritable_file(condor_config, tmp_path):
    ran = run(config.config_val_main, "-writeconfig", "-")
    assert ran.status == 0 and "FOO = one two" in ran.out
    ran = run(config.config_val_main, "-write:up", str(tmp_path / "no" / "such" / "dir" / "file"))
    assert ran.status == 1 and "Failed to create configuration file" in ran.err
    ran = run(config.config_val_main, "-write:up")
    assert ran.status == 1 and "requires" in ran.err
