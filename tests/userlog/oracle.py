"""Helpers to compare our JobEventLog with the oracle corpus records."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

from jobledger.tracking.jobeventlog import JobEventLog


def binding_json(value):
    """A JobEvent value in the oracle corpus's JSON mapping (README.md)."""
    from jobledger.eventcore import classad as C
    if isinstance(value, C.ClassAd):
        return {k: binding_json(value[k]) for k in sorted(value.keys())}
    if isinstance(value, C.ExprTree):
        return {"$expr": str(value)}
    if isinstance(value, C.Value):
        return {"$undefined": True} if value == C.Value.Undefined else {"$error": True}
    if isinstance(value, list):
        return [binding_json(v) for v in value]
    return value


def event_record(event, with_text=True):
    """One of our events as an oracle record (same keys, same JSON types)."""
    rec = {
        "type": event["EventTypeNumber"],
        "cluster": event.cluster,
        "proc": event.proc,
        "timestamp": event.timestamp,
        "attrs": {k: binding_json(v) for k, v in sorted(event.items())},
        "end_offset": event.end_offset,
    }
    if with_text:
        rec["text"] = str(event)
    return rec


def typed(value):
    """JSON value with Python types made visible (1 vs 1.0 vs True)."""
    if isinstance(value, dict):
        return {k: typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [typed(v) for v in value]
    return (type(value).__name__, value)


def oracle_events(oracle_dir: Path, name: str):
    data = json.loads((oracle_dir / "userlog" / f"{name}.json").read_text("utf-8"))
    return [r for r in data if "outcome" not in r]


def oracle_outcomes(oracle_dir: Path, name: str):
    data = json.loads((oracle_dir / "userlog" / f"{name}.json").read_text("utf-8"))
    return [r for r in data if "outcome" in r]


def read_all(path, year, errors="ignore"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with JobEventLog(str(path), year=year, errors=errors).events(0) as jel:
            jel.events(0)
            return list(jel)
