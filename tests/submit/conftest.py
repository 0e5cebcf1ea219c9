"""Submit tests: the oracle corpus folder as the current directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "oracle" / "submit"


def corpus_cases() -> list[str]:
    return sorted(p.stem for p in CORPUS.glob("s*.sub"))


def load_case(name: str) -> tuple[str, dict]:
    return (CORPUS / f"{name}.sub").read_text("utf-8"), json.loads((CORPUS / f"{name}.json").read_text("utf-8"))


@pytest.fixture
def in_corpus(oracle_dir, monkeypatch):
    """cwd = the corpus folder, environment as gen.py forced it."""
    monkeypatch.chdir(oracle_dir / "submit")
    monkeypatch.setenv("ORACLE_ENV_VAR", "oracle-value")
    monkeypatch.setenv("ORACLE_ENV_PATH", "some/where")
    monkeypatch.delenv("ORACLE_ENV_UNSET", raising=False)
    return oracle_dir / "submit"


def outcome(fn):
    """{"value": fn()} or {"error": {"type", "message"}} like gen.py records."""
    try:
        return {"value": fn()}
    except Exception as exc:  # noqa: BLE001 - compared with the oracle's record
        return {"error": {"type": type(exc).__name__, "message": str(exc)}}


def same_error(got: BaseException, expected: dict) -> bool:
    """Our exception is an instance of the built-in the oracle raised, and its
    message contains the oracle's (ours add the line and the text)."""
    builtin = {"ValueError": ValueError, "KeyError": KeyError, "TypeError": TypeError}.get(expected["type"])
    if builtin is None or not isinstance(got, builtin):
        return False
    msg = expected["message"]
    return msg in str(got) or (builtin is KeyError and got.args[:1] == (msg.strip("'"),))

