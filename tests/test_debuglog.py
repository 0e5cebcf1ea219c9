"""enable_debug/enable_log/log write what htcondor2's write: HTCondor's dprintf header
(date, and with TOOL_DEBUG's D_PID, D_CAT, D_SUB_SECOND, D_TIMESTAMP its other parts; the
level's own SubSecond/Timestamp/PID/NoHeader bits), and only the categories TOOL_DEBUG
shows.  Each binding runs in a process of its own; lines are compared with the clock
and the pid taken out."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

SCRIPT = """
import {module} as h
h.{enable}()
for level in h.LogLevel:
    h.log(level, "level " + level.name)
h.log(h.LogLevel.Always, "ends in a newline\\n")
"""
DATE = re.compile(r"\d\d/\d\d/\d\d \d\d:\d\d:\d\d")


def lines(module: str, enable: str, flags: str, tmp_path) -> list[str]:
    config = tmp_path / "condor_config"
    config.write_text(f"LOG = {tmp_path}\nTOOL_LOG = {tmp_path}/ToolLog.{module}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("_CONDOR_")}
    env.update(CONDOR_CONFIG=str(config), _CONDOR_TOOL_DEBUG=flags)
    done = subprocess.run([sys.executable, "-c", SCRIPT.format(module=module, enable=enable)],
                          capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    text = done.stderr if enable == "enable_debug" else (tmp_path / f"ToolLog.{module}").read_text()
    text = DATE.sub("DATE", text)
    text = re.sub(r"\(pid:\d+\)", "(pid:N)", text)
    text = re.sub(r"^\d{9,}", "TIME", text, flags=re.M)
    return re.sub(r"\.\d{3} ", ".mmm ", text).splitlines()


@pytest.mark.parametrize("flags", ["", "D_FULLDEBUG", "D_PID D_CAT", "D_CAT D_FULLDEBUG D_NETWORK",
                                   "D_SUB_SECOND D_JOB", "D_TIMESTAMP D_CAT"])
@pytest.mark.parametrize("enable", ["enable_debug", "enable_log"])
def test_same_lines_as_htcondor2(tmp_path, flags, enable):
    pytest.importorskip("htcondor2")
    ours = lines("jobledger", enable, flags, tmp_path)
    assert ours == lines("htcondor2", enable, flags, tmp_path)
    assert ours and not any("(TOOL:" in line for line in ours)


def test_log_refuses_what_is_no_level():
    import jobledger as htcondor
    with pytest.raises(TypeError):
        htcondor.log("Always", "x")
    with pytest.raises(TypeError):
        htcondor.log(htcondor.LogLevel.Always, 5)
