"""Request body size limits, enforced while the body streams in.

A pure ASGI middleware: it rejects on ``Content-Length`` up front and also
counts chunked bodies, so an oversized upload is a 413, never a memory spike.
"""

from __future__ import annotations

import json

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class _TooLarge(HTTPException):
    """An HTTPException so the framework's body reader re-raises it unchanged."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"Request body is larger than the limit of {limit} bytes.")


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, default_limit: int, overrides: dict[str, int]) -> None:
        self.app = app
        self.default_limit = default_limit
        self.overrides = overrides

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.overrides.get(scope["path"], self.default_limit)
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    if int(value) > limit:
                        await _reject(send, limit)
                        return
                except ValueError:
                    pass
        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise _TooLarge(limit)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _TooLarge:
            if not started:
                await _reject(send, limit)


async def _reject(send: Send, limit: int) -> None:
    body = json.dumps(
        {
            "detail": f"Request body is larger than the limit of {limit} bytes.",
            "code": "payload_too_large",
        }
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
