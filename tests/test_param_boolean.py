"""Boolean settings as HTCondor's param_boolean reads them (condor_config.cpp
string_is_boolean_param): true/1/false/0 in any case, else a ClassAd expression; a value
that is neither (``yes`` is an attribute reference) is an error in HTCondor's words."""

from __future__ import annotations

import pytest

from jobledger.eventcore.config import Setting, param_boolean
from jobledger.eventcore.errors import ConfigError


@pytest.mark.parametrize("text,value", [
    ("true", True), ("TRUE", True), ("True  ", True), ("1", True), ("false", False), ("FaLsE", False),
    ("0", False), ("0 ", False), ("2 > 1", True), ("1 == 2", False), ("10", True), ("0.0", False),
    ("true && false", False), ("(1)", True),
])
def test_values(text, value):
    assert param_boolean("SOME_KNOB", text, not value) is value


@pytest.mark.parametrize("default", [True, False])
def test_unset_or_blank_is_the_default(default):
    assert param_boolean("SOME_KNOB", None, default) is default
    assert param_boolean("SOME_KNOB", "  ", default) is default


@pytest.mark.parametrize("text", ["yes", "no", "t", "on", "truely", '"true"', "1 +", "undefined"])
def test_what_htcondor_refuses(text):
    where = Setting("SOME_KNOB", text, "/etc/condor/condor_config.local", 7)
    with pytest.raises(ConfigError) as caught:
        param_boolean("SOME_KNOB", text, False, where)
    assert str(caught.value) == (f'/etc/condor/condor_config.local:7: SOME_KNOB in the condor configuration  '
                                 f'is not a valid boolean ("{text}").  Please set it to True or False (default is False)')


def test_a_schedd_with_a_setting_that_is_no_boolean_does_not_start(tmp_path):
    """HTCondor's daemons stop on such a value (param_boolean's EXCEPT): so does the pool's
    start, saying which setting and where."""
    from jobledger.daemons.client.personal import PersonalPool
    from jobledger.eventcore.errors import HTCondorException
    pool = PersonalPool(local_dir=tmp_path / "pool", config={
        "DAEMON_LIST": "MASTER COLLECTOR SCHEDD", "ALLOW_SUBMIT_FROM_KNOWN_USERS_ONLY": "yes"})
    try:
        with pytest.raises(HTCondorException, match=r'ALLOW_SUBMIT_FROM_KNOWN_USERS_ONLY in the condor '
                                                    r'configuration  is not a valid boolean \("yes"\)'):
            pool.start()
    finally:
        pool.stop()
