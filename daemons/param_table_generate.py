"""Write ``daemons/param_table.json``: HTCondor's built-in parameter defaults, as data.

Source: ``src/condor_utils/param_info.in`` of HTCondor's public repository
(github.com/htcondor/htcondor, Apache License 2.0), the table HTCondor compiles
its defaults from.  Usage::

    python -m jobledger.daemons.param_table_generate path/to/param_info.in [commit]

Each ``[NAME]`` entry with a non-empty ``default`` becomes ``NAME: [default, type]``
(the raw, unexpanded default and the declared type: string, int, bool, double, long
or path).  Metaknobs (``[$...]``) and subsystem-qualified entries (``SCHEDD.X``) are
left out, as ``htcondor2.param`` leaves them out of its listing.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

OUT = Path(__file__).with_name("param_table.json")
_ENTRY = re.compile(r"^\[([^\]]+)\]\s*$")
_MULTI = re.compile(r"^(\w+)\s*:\s*@(\w+)\s*$")
_PAIR = re.compile(r"^(\w+)\s*=(.*)$")


def read_param_info(text: str) -> dict[str, dict[str, str]]:
    """Every entry of a param_info.in text: name -> {keyword: value}."""
    entries: dict[str, dict[str, str]] = {}
    current = None
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        head = _ENTRY.match(line)
        if head:
            current = entries.setdefault(head.group(1), {})
            continue
        if current is None:
            continue
        multi = _MULTI.match(line)
        if multi:
            body = []
            while i < len(lines) and lines[i].strip() != "@" + multi.group(2):
                body.append(lines[i])
                i += 1
            i += 1
            current[multi.group(1)] = "\n".join(body)
            continue
        pair = _PAIR.match(line)
        if pair:
            current[pair.group(1)] = pair.group(2).strip()
    return entries


def defaults_of(entries: dict) -> dict[str, list[str]]:
    return {name: [entry["default"], entry.get("type", "string")]
            for name, entry in sorted(entries.items())
            if not name.startswith("$") and "." not in name and entry.get("default", "") != ""}


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    entries = read_param_info(Path(argv[1]).read_text("utf-8"))
    data = {"source": "HTCondor src/condor_utils/param_info.in (Apache-2.0)"
                      + (f", commit {argv[2]}" if len(argv) == 3 else ""),
            "params": defaults_of(entries)}
    rows = ",\n".join(f"  {json.dumps(name)}: {json.dumps(value)}" for name, value in data["params"].items())
    OUT.write_text(f'{{"source": {json.dumps(data["source"])},\n"params": {{\n{rows}\n}}}}\n', "utf-8")
    print(f"{len(data['params'])} defaults written to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
