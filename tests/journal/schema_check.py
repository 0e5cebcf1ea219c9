"""Validate journal rows and payloads against schemas/ (jsonschema)."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources

import jsonschema
from referencing import Registry, Resource

from jobledger.eventcore.records import RECORD_VERSIONS


@lru_cache(maxsize=None)
def registry() -> Registry:
    resources_ = []
    root = resources.files("jobledger.schemas")
    for folder in ("journal", "events"):
        for item in root.joinpath(folder).iterdir():
            if item.name.endswith(".json"):
                schema = json.loads(item.read_text("utf-8"))
                resources_.append((schema["$id"], Resource.from_contents(schema)))
    return Registry().with_resources(resources_)


BASE = "https://jobledger.invalid/schemas/journal/"


@lru_cache(maxsize=None)
def validator(name: str):
    schema = registry().get_or_retrieve(BASE + name).value.contents
    return jsonschema.Draft202012Validator(schema, registry=registry())


def check_payload(kind: str, payload: dict) -> None:
    validator(f"{kind}.v{RECORD_VERSIONS[kind]}.json").validate(payload)


def check_row(row) -> None:
    validator("row.v2.json").validate(row._asdict())
    check_payload(row.type, json.loads(row.payload))
