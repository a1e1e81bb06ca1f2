"""Errors on /v1 leave in OpenAI's shape, so OpenAI clients can read them.

Every other path answers ``{"detail", "code"}`` (``api/errors.py``); an
OpenAI client (the ``openai`` package, Open WebUI) reads
``{"error": {"message", "type", "param", "code"}}`` instead. Rather than a
second set of handlers, this ASGI middleware rewrites the famulus error body
of any /v1 response, whoever produced it (the key check, validation, a
service, the body-size or nesting limits), so both shapes always say the same.
A ``422`` becomes ``400``, the status OpenAI uses for a request it cannot take.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

PREFIX = "/v1"
_TYPES = {
    401: "authentication_error",
    403: "permission_error",
    429: "rate_limit_error",
}


def is_openai_path(path: str) -> bool:
    return path == PREFIX or path.startswith(PREFIX + "/")


def error_type(status: int) -> str:
    if status >= 500:
        return "server_error"
    return _TYPES.get(status, "invalid_request_error")


def openai_error(status: int, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """The OpenAI status and body for a famulus error ``body`` with ``status``."""
    status = 400 if status == 422 else status
    errors = body.get("errors") or []
    loc = errors[0].get("loc", []) if errors and isinstance(errors[0], dict) else []
    param = ".".join(str(p) for p in loc if p not in ("body", "header", "query")) or None
    code = "invalid_api_key" if status == 401 else body.get("code")
    error = {
        "message": str(body.get("detail", "")),
        "type": error_type(status),
        "param": param,
        "code": code,
    }
    return status, {"error": error}


class OpenAIErrorShape:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not is_openai_path(scope["path"]):
            await self.app(scope, receive, send)
            return
        held: Message | None = None
        chunks: list[bytes] = []

        async def reshaping_send(message: Message) -> None:
            nonlocal held
            if message["type"] == "http.response.start" and _json_error(message):
                held = message
                return
            if held is None or message["type"] != "http.response.body":
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                await _send_reshaped(send, held, b"".join(chunks))

        await self.app(scope, receive, reshaping_send)


def _json_error(start: Message) -> bool:
    if start["status"] < 400:
        return False
    headers = dict(start.get("headers", []))
    return headers.get(b"content-type", b"").startswith(b"application/json")


async def _send_reshaped(send: Send, start: Message, raw: bytes) -> None:
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    status = start["status"]
    if isinstance(body, dict) and "detail" in body:
        status, body = openai_error(status, body)
        raw = json.dumps(body).encode()
    headers = [
        (name, value) for name, value in start.get("headers", []) if name != b"content-length"
    ]
    headers.append((b"content-length", str(len(raw)).encode()))
    await send({**start, "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": raw, "more_body": False})
