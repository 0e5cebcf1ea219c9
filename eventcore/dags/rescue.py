"""Rescue DAGs: what DAGMan recorded as finished, applied back to a DAG.

DAGMan writes ``<dag file>.rescueNNN`` (NNN = 001, 002, ...) when a DAG
fails: comment lines, then ``DONE <node>`` for each finished node and, when
retries are not reset, ``RETRY <node> <remaining> [UNLESS-EXIT <code>]``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import attrs

from jobledger.eventcore.errors import CannotInvertFormat, DAGFileError

from .formatter import NodeNameFormatter


@attrs.frozen
class RescueState:
    """What a rescue file says: finished node indices by layer, and the
    retries left for nodes that still had some."""

    done: dict[str, frozenset[int]]
    retries_left: dict[str, int]


def _number(token: str, what: str, source: str, line: int) -> int:
    try:
        return int(token)
    except ValueError:
        raise DAGFileError(f"{what} must be an integer, not {token!r}", source, line) from None


def parse_rescue(text: str, formatter: NodeNameFormatter, source: str = "<rescue file>") -> RescueState:
    """The DONE and RETRY lines of a rescue file, node names parsed by ``formatter``."""
    done: dict[str, set[int]] = {}
    retries: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        words = raw.split()
        if not words or words[0].startswith("#"):
            continue
        keyword = words[0].upper()
        if keyword == "DONE" and len(words) == 2:
            try:
                layer, index = formatter.parse(words[1])
            except CannotInvertFormat as error:
                raise DAGFileError(str(error), source, number) from None
            done.setdefault(layer, set()).add(index)
        elif keyword == "RETRY" and len(words) in (3, 5) and (len(words) == 3 or words[3].upper() == "UNLESS-EXIT"):
            retries[words[1]] = _number(words[2], "the retry count", source, number)
        else:
            raise DAGFileError(f"not a rescue file line (DONE <node> or RETRY <node> <n>): {raw.strip()!r}",
                               source, number)
    return RescueState({k: frozenset(v) for k, v in done.items()}, retries)


def apply_rescue(dag, state: RescueState) -> None:
    """Replace every node's ``done`` with what the rescue file says."""
    for node in dag.nodes:
        node.done = {index: True for index in sorted(state.done.get(node.name, ()))}


RESCUE_SUFFIX = re.compile(r"\.rescue(\d{3,})$")


def latest_rescue_name(names: Iterable[str], dag_file_name: str) -> str | None:
    """Of the file names in a directory, the rescue file DAGMan would use for
    ``dag_file_name``: the highest ``.rescueNNN`` (``.old`` ones are retired)."""
    best, best_number = None, -1
    for name in names:
        if not name.startswith(dag_file_name):
            continue
        match = RESCUE_SUFFIX.fullmatch(name[len(dag_file_name):])
        if match and int(match.group(1)) > best_number:
            best, best_number = name, int(match.group(1))
    return best


def rescue_text(dag, text: str, formatter: NodeNameFormatter, source: str = "<rescue file>") -> None:
    """Apply the rescue file text ``text`` to ``dag`` (every node's ``done`` replaced)."""
    apply_rescue(dag, parse_rescue(text, formatter, source))
