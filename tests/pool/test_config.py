"""The configuration language (eventcore/config.py) and ``param``/``reload_config``."""

from __future__ import annotations

import pytest

from jobledger.daemons.config_files import Param, load_config, pool_config_text, config_value
from jobledger.eventcore.config import ConfigTable, expand, parse_config, typed_value
from jobledger.eventcore.errors import ConfigError


def value(text: str, name: str, env=None) -> str:
    table = parse_config(text, "t.conf")
    return expand(table.raw(name), table, env or {})


def test_assignment_reference_and_default():
    text = "A = 1\nB = $(A)$(a) and $(MISSING:dflt) $(NONE)\n"
    assert value(text, "B") == "11 and dflt "


def test_names_are_case_insensitive_and_later_wins():
    table = parse_config("foo = 1\nFOO = 2\n")
    assert table.raw("Foo") == "2"


def test_comments_and_continuation():
    text = "# a comment\nX = one \\\n  two\n   # indented comment\nY=3\n"
    table = parse_config(text)
    assert table.raw("X") == "one   two"
    assert table.raw("Y") == "3"


def test_multiline_value():
    table = parse_config("TXT @=end\nline one\nline two\n@end\nZ = 1\n")
    assert table.raw("TXT") == "line one\nline two"
    assert table.raw("Z") == "1"


def test_env_and_match_time_references():
    assert value("A = $ENV(HOME_X) $$(Cpus)", "A", {"HOME_X": "/h"}) == "/h $$(Cpus)"


def test_self_reference_is_an_error_not_a_hang():
    with pytest.raises(ConfigError):
        value("A = $(B)\nB = $(A)\n", "A")


def test_bad_line_names_file_and_line():
    with pytest.raises(ConfigError) as info:
        parse_config("A = 1\nthis is not config\n", "pool.conf")
    assert info.value.line == 2 and info.value.path == "pool.conf"
    assert "pool.conf:2" in str(info.value)


def test_bad_input_changes_nothing():
    table = parse_config("A = 1\n")
    with pytest.raises(ConfigError):
        parse_config("A = 2\n???\n", table=table)
    assert table.raw("A") == "1"


def test_if_else_endif():
    text = "if defined A\nB = yes\nelse\nB = no\nendif\nif false\nC = 1\nendif\n"
    assert parse_config("A = 1\n" + text).raw("B") == "yes"
    assert parse_config(text).raw("B") == "no"
    assert parse_config(text).raw("C") is None


def test_unterminated_if_is_an_error():
    with pytest.raises(ConfigError):
        parse_config("if true\nA = 1\n")


def test_use_metaknob_and_unknown_metaknob():
    table = parse_config("use ROLE: Personal\n")
    assert "SCHEDD" in table.raw("DAEMON_LIST")
    with pytest.raises(ConfigError) as info:
        parse_config("\nuse ROLE: Nonsense\n", "x")
    assert info.value.line == 2


def test_include(tmp_path):
    (tmp_path / "inc.conf").write_text("INCLUDED = 7\n")
    table = parse_config(f"include : {tmp_path}/inc.conf\n", read=lambda p: open(p).read())
    assert table.raw("INCLUDED") == "7"
    with pytest.raises(ConfigError):
        parse_config(f"include : {tmp_path}/missing.conf\n", read=lambda p: open(p).read())


def test_typed_values():
    assert typed_value("UPDATE_INTERVAL", "300") == 300
    assert typed_value("ENABLE_SOAP", "False") is False
    assert typed_value("START", "True") == "True"  # an expression parameter stays a string
    assert typed_value("CUSTOM", "42") == "42"


def test_param_reads_condor_config(tmp_path, monkeypatch):
    conf = tmp_path / "condor_config"
    conf.write_text("LOCAL_DIR = /x\nMY_KNOB = $(LOCAL_DIR)/y\nUPDATE_INTERVAL = 7\n")
    monkeypatch.setenv("CONDOR_CONFIG", str(conf))
    p = Param()
    assert p["MY_KNOB"] == "/x/y"
    assert p["UPDATE_INTERVAL"] == 7
    assert p["SPOOL"] == "/x/spool"
    with pytest.raises(KeyError):
        p["NOT_THERE"]
    assert p.get("NOT_THERE", "d") == "d"
    p["MY_KNOB"] = "over"
    assert p["MY_KNOB"] == "over"
    with pytest.raises(TypeError):
        p["MY_KNOB"] = 5
    del p["MY_KNOB"]
    assert "MY_KNOB" not in p
    conf.write_text("LOCAL_DIR = /z\n")
    p.reload()
    assert p["LOCAL_DIR"] == "/z"


def test_env_override(tmp_path, monkeypatch):
    monkeypatch.setenv("_CONDOR_FROM_ENV", "hello")
    assert config_value(load_config(None, {"_CONDOR_FROM_ENV": "hello"}), "FROM_ENV") == "hello"


def test_local_config_dir(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "10-x").write_text("FROM_DIR = 1\n")
    conf = tmp_path / "c"
    conf.write_text(f"LOCAL_CONFIG_DIR = {tmp_path}/d\n")
    assert load_config(str(conf), {}).raw("FROM_DIR") == "1"


def test_pool_config_text_parses(tmp_path):
    table = parse_config(pool_config_text(tmp_path, {"EXTRA": None, "K": "v"}, "RAW_ONE = 1"))
    assert config_value(table, "LOCAL_DIR") == tmp_path.as_posix()
    assert config_value(table, "SPOOL") == f"{tmp_path.as_posix()}/spool"
    assert table.raw("EXTRA") == "" and table.raw("RAW_ONE") == "1"
    assert config_value(table, "COLLECTOR_HOST").startswith("<")
