"""The famulus HTTP API as the terminal client sees it: a few JSON calls and the
session's Server-Sent Events stream.

Only documented endpoints are used (docs/api.md), so the client works against
any famulus server of this API, wherever it runs. The key travels only in the
``Authorization`` header and is never part of an error message.

Everything the server says is cleaned of control characters here (``printable``),
since it ends up on a terminal, which would obey them.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any

import httpx

# C0 and C1 control characters but tab and line break. In the model's text, a
# tool's result or an MCP tool's description (text others can steer), an escape
# sequence would be run by the terminal: clear the screen, move the cursor over
# an approval question, retitle the window or set the clipboard (OSC 52).
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Long-lived event streams: no read timeout (the server pings every 15 s).
_STREAM_TIMEOUT = httpx.Timeout(10.0, read=None)


class ApiError(Exception):
    """A call the server answered with an error body; ``detail`` is its sentence."""

    def __init__(self, status: int, detail: str, code: str = "") -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.code = code


class Unreachable(Exception):
    """The server could not be reached at all (refused, timed out, bad address)."""


@dataclass
class Event:
    """One SSE event: its type, its JSON data and its id (None for text_delta)."""

    type: str
    data: dict[str, Any] = field(default_factory=dict)
    id: int | None = None


class SSEParser:
    """Turns the lines of a ``text/event-stream`` into events. Comment lines
    (``: ping``, ``: connected``) are reported as ``comment`` so a caller can
    tell the stream is open before it sends anything."""

    def __init__(self) -> None:
        self._type = ""
        self._data: list[str] = []
        self._id: int | None = None

    def feed(self, line: str) -> Event | None:
        """One line without its newline; an event when a blank line ends one."""
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return Event("comment", {"text": line[1:].strip()})
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self._type = value
        elif name == "data":
            self._data.append(value)
        elif name == "id" and value.isdigit():
            self._id = int(value)
        return None

    def _dispatch(self) -> Event | None:
        if not self._data:
            self._type, self._id = "", None
            return None
        try:
            data = json.loads("\n".join(self._data))
        except json.JSONDecodeError:
            data = {}
        payload = printable(data) if isinstance(data, dict) else {}
        kind = printable(self._type) or str(payload.get("type", "message"))
        event = Event(kind, payload, self._id)
        self._type, self._data, self._id = "", [], None
        return event


def printable(value: Any) -> Any:
    """``value`` (JSON data) with every string freed of control characters."""
    if isinstance(value, str):
        return _CONTROLS.sub("", value.replace("\r\n", "\n"))
    if isinstance(value, dict):
        return {printable(k): printable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [printable(v) for v in value]
    return value


def _error_of(response: httpx.Response) -> ApiError:
    """The API's error body as an exception; a non-JSON body still gives a sentence."""
    try:
        body = printable(response.json())
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    detail = str(body.get("detail") or f"The server answered HTTP {response.status_code}.")
    return ApiError(response.status_code, detail, str(body.get("code", "")))


class FamulusClient:
    """An async client of one famulus server, authenticated with one key."""

    def __init__(self, base_url: str, key: str, transport: httpx.AsyncBaseTransport | None = None):
        self.base_url = base_url.rstrip("/")
        self._http = httpx.AsyncClient(
            base_url=self.base_url,
            headers={"Authorization": f"Bearer {key}"},
            timeout=httpx.Timeout(15.0),
            transport=transport,
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = await self._http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise Unreachable(_transport_reason(exc)) from None
        if response.status_code >= 400:
            raise _error_of(response)
        return printable(response.json())

    async def check(self) -> str:
        """The server's version once the key is accepted; ``ApiError`` 401 when
        the server refuses it, ``Unreachable`` when nobody answers."""
        body = await self._call("GET", "/health")
        if body.get("auth") is not True:
            raise ApiError(401, "The server refused the API key.", "unauthorized")
        return str(body.get("version", "?"))

    async def new_session(self, name: str) -> dict[str, Any]:
        return dict(await self._call("POST", "/sessions", json={"name": name}))

    async def session(self, session_id: str) -> dict[str, Any]:
        return dict(await self._call("GET", "/session", params={"session_id": session_id}))

    async def history(self, session_id: str) -> list[dict[str, Any]]:
        body = await self._call("GET", "/session/history", params={"session_id": session_id})
        return list(body.get("messages", []))

    async def sessions(self) -> list[dict[str, Any]]:
        return list((await self._call("GET", "/sessions")).get("sessions", []))

    async def skills(self) -> list[dict[str, Any]]:
        return list((await self._call("GET", "/skills")).get("skills", []))

    async def send(self, session_id: str, text: str, client_id: str) -> dict[str, Any]:
        body = {"message": text, "session_id": session_id, "client_id": client_id}
        return dict(await self._call("POST", "/chat/message", json=body))

    async def cancel(self, *, run_id: str | None = None, session_id: str | None = None) -> str:
        body = {k: v for k, v in (("run_id", run_id), ("session_id", session_id)) if v}
        return str((await self._call("POST", "/cancel", json=body)).get("status", ""))

    async def answer(self, run_id: str, tool_id: str, approved: bool) -> None:
        body = {"run_id": run_id, "tool_id": tool_id, "approved": approved}
        await self._call("POST", "/tools/result", json=body)

    async def events(
        self, session_id: str, after: int | None = None
    ) -> AsyncGenerator[Event, None]:
        """The session's events with token-level ``text_delta``; ``after`` replays
        from that id on (a reconnect). Without it the stream starts live."""
        params: dict[str, str] = {"stream": "true"}
        if after is not None:
            params["after"] = str(after)
        parser = SSEParser()
        try:
            async with self._http.stream(
                "GET", f"/chat/events/{session_id}", params=params, timeout=_STREAM_TIMEOUT
            ) as response:
                if response.status_code >= 400:
                    await response.aread()
                    raise _error_of(response)
                async for line in response.aiter_lines():
                    event = parser.feed(line.rstrip("\r"))
                    if event is not None:
                        yield event
        except httpx.TransportError as exc:
            raise Unreachable(_transport_reason(exc)) from None


def _transport_reason(exc: httpx.TransportError) -> str:
    """A short reason for a failed connection, without the request's headers."""
    if isinstance(exc, httpx.ConnectError):
        return "connection refused" if "refused" in str(exc).lower() else "cannot connect"
    if isinstance(exc, httpx.TimeoutException):
        return "timed out"
    return type(exc).__name__
