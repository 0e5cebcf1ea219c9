"""``condor_config_val -writeconfig[:opts] FILE`` (``-write:up FILE``): the configuration
in effect written as a configuration file, so that reading it gives the same values.

As HTCondor's tool writes it without ``:default``/``:detected`` among its options: the
settings the configuration files made (not built-in defaults nor values detected from
the machine), each as its raw ``NAME = value`` (macros unexpanded; multi-line values in
``@=`` form), grouped by the file that set them.  ``FILE`` ``-`` is stdout.
"""

from __future__ import annotations

import sys
from pathlib import Path

from jobledger.condor_cli.args import Failed

BUILT_IN = ("<param table>", "<defaults>", "<detected>")


def config_text(table, options: str | None = None) -> str:
    wanted = {o.strip().lower()[:3] for o in (options or "").replace(",", ":").split(":") if o.strip()}
    built_in = {"<param table>", "<defaults>"} if "def" in wanted else set()
    if "det" in wanted:
        built_in.add("<detected>")
    lines = ["# Configuration written by condor_config_val -writeconfig", ""]
    source = None
    settings = list(table.settings.values())
    if "sor" in wanted:
        settings.sort(key=lambda s: s.name.upper())
    for setting in settings:
        if setting.source in BUILT_IN and setting.source not in built_in:
            continue
        if setting.source != source and "sor" not in wanted:
            source = setting.source
            lines += ["#", f"# from {source}", "#"]
        lines.append(_assignment(setting.name, setting.value))
    return "\n".join(lines) + "\n"


def _assignment(name: str, value: str) -> str:
    if "\n" not in value:
        return f"{name} = {value}"
    tag = "end"
    while f"@{tag}" in value:
        tag += "_"
    return f"{name} @={tag}\n{value}\n@{tag}"


def write_config(table, path: str, options: str | None = None) -> int:
    text = config_text(table, options)
    if path == "-":
        sys.stdout.write(text)
        return 0
    try:
        Path(path).write_text(text)
    except OSError:
        raise Failed(f"Failed to create configuration file {path}.") from None
    return 0
