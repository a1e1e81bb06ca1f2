"""Every 2xx body in our OpenAPI document has a declared shape.

A route that returns ``dict[str, Any]`` shows up as a bare ``object``, so a
client (and the fuzz test's response check) learns nothing about it. Event
streams are exempt; so are the few fields that hold free-form data by design,
listed below with the reason.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import API_KEY

from famulus.app import create_app
from famulus.settings import Settings

# component.field -> why it is free-form
FREE_FORM = {
    "Message.images[]": "an image part as the model API stores it",
    "RevertOut.images[]": "as Message.images[] (the reverted message's images)",
    "WithdrawnOut.images[]": "as Message.images[] (the withdrawn message's images)",
    "FactOut.provenance": "where a fact came from, one shape per source type",
    "InspectedFact.provenance": "as FactOut.provenance",
    "EventOut.data": "a learning event's payload, one shape per event type",
    "NotifierOut.config": "the fields of the notifier's type (GET /notifiers/types)",
    "Automation.trigger": "a time or event trigger, checked in automations/triggers.py",
    "AutomationDetail.trigger": "as Automation.trigger",
    "ToolOut.input_schema": "an MCP tool's JSON Schema, as its server declares it",
}

Schema = dict[str, Any]


@pytest.fixture(scope="module")
def doc() -> Schema:
    home = Path(tempfile.mkdtemp()) / "schema"
    settings = Settings(home=home, api_key=API_KEY, project_dir=home)  # type: ignore[arg-type]
    return create_app(settings).openapi()


def _success_bodies(doc: Schema) -> Iterator[tuple[str, Schema | None]]:
    """(``METHOD /path status type``, schema) of every 2xx JSON body; a 2xx
    other than 204 that declares no content at all yields a None schema."""
    for path, operations in doc["paths"].items():
        for method, op in operations.items():
            for status, response in op["responses"].items():
                if not status.startswith("2") or status == "204":
                    continue
                where = f"{method.upper()} {path} {status}"
                content = response.get("content")
                if not content:
                    yield where, None
                for media_type, media in (content or {}).items():
                    if media_type != "text/event-stream":
                        yield f"{where} {media_type}", media.get("schema")


def _bare(schema: Schema) -> bool:
    """An object with no properties and no typed values (``dict[str, Any]``), or Any."""
    if not schema:
        return True
    free_values = not isinstance(schema.get("additionalProperties"), dict)
    return schema.get("type") == "object" and not schema.get("properties") and free_values


def _undeclared(
    schema: Schema | None, where: str, components: Schema, inside: frozenset[str] = frozenset()
) -> Iterator[str]:
    """Places under ``schema`` with no declared shape (a component's field is
    named ``Component.field``, so FREE_FORM can name it). ``inside`` holds the
    components on the way down, so a recursive one is walked once."""
    if schema is None:
        yield where
        return
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        if name not in inside:
            yield from _undeclared(components[name], name, components, inside | {name})
        return
    if _bare(schema):
        yield where
        return
    for field, sub in schema.get("properties", {}).items():
        yield from _undeclared(sub, f"{where}.{field}", components, inside)
    if "items" in schema:
        yield from _undeclared(schema["items"], f"{where}[]", components, inside)
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _undeclared(schema["additionalProperties"], f"{where}{{}}", components, inside)
    for variant in schema.get("anyOf", []) + schema.get("oneOf", []) + schema.get("allOf", []):
        if variant.get("type") != "null":
            yield from _undeclared(variant, where, components, inside)


def test_every_success_body_has_a_declared_shape(doc: Schema) -> None:
    components = doc.get("components", {}).get("schemas", {})
    bodies = list(_success_bodies(doc))
    assert len(bodies) > 60  # the walk sees the whole API, not an empty document
    missing = sorted(
        {
            place
            for where, schema in bodies
            for place in _undeclared(schema, where, components)
            if place not in FREE_FORM
        }
    )
    assert missing == [], f"2xx bodies without a declared shape: {missing}"


def test_free_form_list_names_real_fields(doc: Schema) -> None:
    """An entry for a field that no longer exists (or became typed) is stale."""
    components = doc.get("components", {}).get("schemas", {})
    found = {
        place for _, schema in _success_bodies(doc) for place in _undeclared(schema, "", components)
    }
    assert sorted(set(FREE_FORM) - found) == []
