"""A minimal SSE reader for tests: parses id/event/data frames off an httpx stream."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx


@dataclass
class SSEEvent:
    id: int | None
    event: str
    data: dict[str, Any]


def iter_events(
    response: httpx.Response, on_comment: Callable[[], object] | None = None
) -> Iterator[SSEEvent]:
    """Yield events from a streaming response; comments are skipped (``on_comment``
    is called for each, e.g. to learn that the stream is open)."""
    ev_id: int | None = None
    ev_type = "message"
    data_lines: list[str] = []
    for line in response.iter_lines():
        if line == "":
            if data_lines:
                yield SSEEvent(ev_id, ev_type, json.loads("\n".join(data_lines)))
            ev_id, ev_type, data_lines = None, "message", []
            continue
        if line.startswith(":"):
            if on_comment is not None:
                on_comment()
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "id":
            ev_id = int(value)
        elif field == "event":
            ev_type = value
        elif field == "data":
            data_lines.append(value)


def collect(
    client: httpx.Client,
    path: str,
    count: int,
    headers: dict[str, str] | None = None,
    timeout: float = 10.0,
) -> list[SSEEvent]:
    """Read ``count`` events from ``path`` then disconnect."""
    events: list[SSEEvent] = []
    with client.stream("GET", path, headers=headers, timeout=timeout) as response:
        assert response.status_code == 200, response.read()
        for event in iter_events(response):
            events.append(event)
            if len(events) >= count:
                break
    return events
