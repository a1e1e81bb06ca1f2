"""Endpoints that take no body must not silently ignore one.

``POST /memory/clear {"x": 1}`` should not wipe memory as if the stray field
meant nothing: a body on an endpoint without one is judged like any other
body (malformed JSON 400, an unexpected field 422). Empty, ``{}`` and
``null`` are accepted, since many HTTP clients send them by habit.

Which endpoints take no body is read once from the app's own OpenAPI
document, so a new route is covered without a list to keep. The middleware
only marks the request; ``deps.require_key`` raises after authentication, so
a caller without the key still learns that first.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

_METHODS = {"POST", "PUT", "PATCH", "DELETE"}
STATE_KEY = "body_problem"


def bodyless_routes(openapi: dict[str, Any]) -> list[tuple[str, re.Pattern[str]]]:
    """(method, path regex) of every operation without a request body."""
    found = []
    for path, operations in openapi.get("paths", {}).items():
        pattern = re.compile("^" + re.sub(r"\{[^}/]+\}", "[^/]+", path) + "$")
        for method, operation in operations.items():
            if method.upper() in _METHODS and "requestBody" not in operation:
                found.append((method.upper(), pattern))
    return found


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


class BodylessMiddleware:
    def __init__(self, app: ASGIApp, openapi: Callable[[], dict[str, Any]]) -> None:
        self.app = app
        self._openapi = openapi
        self._routes: list[tuple[str, re.Pattern[str]]] | None = None

    def _takes_no_body(self, method: str, path: str) -> bool:
        if self._routes is None:
            self._routes = bodyless_routes(self._openapi())
        return any(m == method and p.match(path) for m, p in self._routes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] not in _METHODS
            or not self._takes_no_body(scope["method"], scope["path"])
        ):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        content_type = next(
            (v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"content-type"),
            "",
        )
        problem = classify(body, content_type)
        if problem is not None:
            scope.setdefault("state", {})[STATE_KEY] = problem
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)
