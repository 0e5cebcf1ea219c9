"""``-help`` of every condor_* command: the usage text on the stream, and the
exit status, that the HTCondor tool of that name uses (read from HTCondor's
sources: most tools print it on stdout and exit 0; condor_rm and its kin,
condor_status, condor_wait, condor_tail, condor_userlog, condor_version and
the daemon tools built from HTCondor's tool.cpp print it on stderr; and
condor_config_val prints it on stderr and exits 1)."""

from __future__ import annotations

import importlib
import tomllib
from pathlib import Path

import pytest

from tests.condor_cli.conftest import run

# tool -> (stream with the usage text, exit status)
HELP = {
    "condor_submit": ("out", 0), "condor_q": ("out", 0), "condor_history": ("out", 0),
    "condor_qedit": ("out", 0), "condor_submit_dag": ("out", 0), "condor_watch_q": ("out", 0),
    "condor_rm": ("err", 0), "condor_hold": ("err", 0), "condor_release": ("err", 0),
    "condor_status": ("err", 0), "condor_wait": ("err", 0), "condor_tail": ("err", 0),
    "condor_userlog": ("err", 0), "condor_version": ("err", 0), "condor_off": ("err", 0),
    "condor_on": ("err", 0), "condor_restart": ("err", 0), "condor_reschedule": ("err", 0),
    "condor_reconfig": ("err", 0),
    "condor_config_val": ("err", 1), "condor_who": ("out", 0), "condor_master": ("err", 0),
    "condor_vacate_job": ("err", 0),
    # condor_ping's usage() writes -help to stdout (stderr only for errors); the token tools'
    # print_usage writes stderr and exits 1
    "condor_ping": ("out", 0), "condor_token_create": ("err", 1), "condor_token_list": ("err", 1),
    "condor_token_request": ("err", 1), "condor_token_request_approve": ("err", 1),
    "condor_token_request_list": ("err", 1), "condor_token_fetch": ("err", 1),
    "condor_token_request_auto_approve": ("err", 1),
    # condor_userprio and condor_drain meet -help as an unknown argument: usage() on stderr,
    # exit 1; condor_store_cred takes any -h... as -h, whose usage() is the same
    "condor_userprio": ("err", 1), "condor_drain": ("err", 1), "condor_store_cred": ("err", 1),
    # condor_transfer_data: usage(0) on stderr
    "condor_transfer_data": ("err", 0),
    # condor_qusers: usage(stdout), exit 0
    "condor_qusers": ("out", 0),
    # condor_dagman's Usage(): stdout, then DC_Exit(EXIT_ERROR)
    "condor_dagman": ("out", 1),
}


def scripts() -> dict[str, str]:
    """The condor_* console scripts the package installs: name -> "module:function"."""
    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    return {name: target for name, target in project["project"]["scripts"].items()
            if name.startswith("condor_")}


def main_of(target: str):
    module, _, function = target.partition(":")
    return getattr(importlib.import_module(module), function)


def test_every_condor_command_says_where_its_help_goes():
    assert set(scripts()) == set(HELP)


@pytest.mark.parametrize("tool", sorted(HELP))
def test_help_goes_where_htcondors_tool_puts_it(tool):
    stream, status = HELP[tool]
    main = main_of(scripts()[tool])
    ran = run(main, "-help")
    assert ran.status == status, (ran.status, ran.out, ran.err)
    shown, other = (ran.out, ran.err) if stream == "out" else (ran.err, ran.out)
    assert other == ""
    assert shown.lower().lstrip().startswith(("usage", "use:")) and tool in shown, shown
    assert run(main, "--help") == ran          # the double-dash spelling is the same flag
