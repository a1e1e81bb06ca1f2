"""Endpoints that take no body must not silently ignore one.

``POST /memory/clear {"x": 1}`` should not wipe memory as if the stray field
meant nothing: a body on an endpoint without one is judged like any other
body (malformed JSON 400, an unexpected field 422). Empty, ``{}`` and
``null`` are accepted, since many HTTP clients send them by habit.

Whether an endpoint takes a body is read from the route the request matched
(``request.scope["route"]``), so a new route is covered without a list to
keep. ``deps.require_key`` calls this after authentication, so a caller
without the key still learns that first.
"""

from __future__ import annotations

import json

from fastapi import Request
from fastapi.routing import APIRoute

from famulus.errors import BadRequest, InvalidRequest, UnsupportedMediaType

_METHODS = {"POST", "PUT", "PATCH", "DELETE"}


def classify(body: bytes, content_type: str = "application/json") -> str | None:
    """None when the body may be ignored, else 'not_json', 'malformed' or 'unexpected'.

    ``{}`` and ``null`` carry nothing, whatever type they were labelled with.
    """
    if not body.strip():
        return None
    is_json = "json" in content_type.lower()
    try:
        value = json.loads(body)
    except ValueError:
        return "malformed" if is_json else "not_json"
    if value in ({}, None):
        return None
    return "unexpected" if is_json else "not_json"


def takes_no_body(request: Request) -> bool:
    route = request.scope.get("route")
    return request.method in _METHODS and isinstance(route, APIRoute) and route.body_field is None


async def refuse_unexpected_body(request: Request) -> None:
    """Raise the 4xx for a body sent to an endpoint that takes none."""
    if not takes_no_body(request):
        return
    problem = classify(await request.body(), request.headers.get("content-type", ""))
    if problem == "not_json":
        raise UnsupportedMediaType(
            "This endpoint takes no body; if you send one, send it as JSON "
            "with 'Content-Type: application/json' (or send none)."
        )
    if problem == "malformed":
        raise BadRequest("The request body is not valid JSON (this endpoint takes no body).")
    if problem == "unexpected":
        raise InvalidRequest(
            "This endpoint takes no request body; send none (or {}).", loc=["body"]
        )
