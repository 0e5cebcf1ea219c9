"""Versioned JSON Schemas of journal records and event payloads (package data)."""

from __future__ import annotations

import json
from importlib import resources


def load(name: str) -> dict:
    """The schema ``name`` (a file name inside this package), parsed."""
    return json.loads(resources.files(__name__).joinpath(name).read_text("utf-8"))
