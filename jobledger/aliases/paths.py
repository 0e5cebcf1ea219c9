"""Where the alias folders are (``python -m jobledger.aliases v1|v2``)."""

from __future__ import annotations

import sys
from pathlib import Path

KINDS = ("v1", "v2")


def alias_path(kind: str) -> Path:
    """The folder whose packages stand in for the bindings of API ``kind`` (v1 or v2)."""
    if kind not in KINDS:
        raise ValueError(f"unknown API {kind!r}: choose one of {', '.join(KINDS)}")
    return Path(__file__).resolve().parent / kind


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] not in KINDS:
        print("usage: python -m jobledger.aliases v1|v2  (prints a folder for PYTHONPATH)", file=sys.stderr)
        return 2
    print(alias_path(args[0]))
    return 0
