"""Too deeply nested JSON bodies, and strings that are no text, are a 400,
judged after the caller is known.

Python's json parser recurses per level: a body of 10,000 ``[`` is a
RecursionError, which would reach the client as a 500, and FastAPI parses a
body before any dependency (the key check included) runs. This middleware sees
every body first. Counting brackets is cheap (C speed), so only a body with
more brackets than the limit is scanned for its real depth; a too-deep one is
answered here: 401/429 if the key is wrong (the key is checked first, exactly
as ``deps.require_key`` does), else 400.

A JSON string may hold a lone UTF-16 surrogate (``"\\ud800"``). Python reads it
into a ``str`` that cannot be encoded, and a field pydantic does not check
itself (a list item, an open model's field) carried it on until SQLite or the
response refused it: a 500, after the row was stored, and every later listing
of it a 500 too. Such a body is refused here, so nothing reads it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from famulus.errors import BadRequest, FamulusError

MAX_DEPTH = 100
_METHODS = {"POST", "PUT", "PATCH", "DELETE"}
_PUBLIC = ("/health",)
# A \\uD800-\\uDFFF escape: cheap to look for, and only then is the body parsed.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def nesting_depth(body: bytes) -> int:
    """The deepest ``[``/``{`` nesting outside strings (no parsing, no recursion)."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in body:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):
            depth += 1
            deepest = max(deepest, depth)
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return deepest


def too_deep(body: bytes, limit: int = MAX_DEPTH) -> bool:
    if body.count(b"[") + body.count(b"{") <= limit:
        return False
    return nesting_depth(body) > limit


def lone_surrogate(body: bytes) -> bool:
    """Whether a string (or key) in the JSON ``body`` holds a lone surrogate."""
    if not _SURROGATE_ESCAPE.search(body):
        return False
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return False  # not JSON: the route's parser says so
    stack: list[Any] = [data]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return False


class JsonDepthMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in _METHODS:
            await self.app(scope, receive, send)
            return
        body, closed = await _read(receive)
        if too_deep(body):
            await _refuse(scope, receive, send, TOO_DEEP)
            return
        if lone_surrogate(body):
            await _refuse(scope, receive, send, NOT_TEXT)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return closed if closed is not None else await receive()

        await self.app(scope, replay, send)


async def _read(receive: Receive) -> tuple[bytes, Message | None]:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks), message  # the client went away
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks), None


TOO_DEEP = f"The JSON body is nested more than {MAX_DEPTH} levels deep; send a flatter body."
NOT_TEXT = (
    "A string in the JSON body holds a lone UTF-16 surrogate (such as \\ud800), "
    "which is no text; send valid Unicode."
)


async def _refuse(scope: Scope, receive: Receive, send: Send, why: str) -> None:
    from famulus.api.deps import authenticate
    from famulus.api.errors import domain_response

    problem: FamulusError = BadRequest(why)
    if scope["path"] not in _PUBLIC:
        headers = dict(scope.get("headers", []))
        scheme, _, token = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
        client = scope["client"][0] if scope.get("client") else "unknown"
        try:  # scrypt may run: off the event loop, as in require_key
            await run_in_threadpool(
                authenticate, scope["app"].state.container, client, scheme, token.strip()
            )
        except FamulusError as exc:
            problem = exc
    await domain_response(problem)(scope, receive, send)
