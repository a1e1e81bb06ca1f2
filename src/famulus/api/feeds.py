"""A live ``Feed`` as a Server-Sent Events response (``GET /automations/events``,
``GET /memory/events``).

Each event is one ``event:``/``data:`` frame whose data is the whole event dict
(``type`` included). A comment line ``: connected`` opens the stream, so a
client knows it is subscribed; ``: ping`` keeps an idle connection alive; the
feed's close marker ends the stream; a client that hangs up is unsubscribed
as its generator is closed.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from fastapi.responses import StreamingResponse

from famulus.feed import FEED_CLOSED, Feed

Opening = Callable[[], list[dict[str, Any]]]


def frame(event: dict[str, Any]) -> str:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"


async def _stream(feed: Feed, ping_s: float, opening: Opening | None) -> AsyncIterator[str]:
    queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    feed.listeners.add(queue)
    # In the same step as subscribing (no await between): whatever is published
    # later is queued, so the opening events are never newer than what follows.
    first = opening() if opening is not None else []
    try:
        yield ": connected\n\n"
        for event in first:
            yield frame(event)
        while True:
            try:
                event = await asyncio.wait_for(queue.get(), timeout=ping_s)
            except TimeoutError:
                yield ": ping\n\n"
                continue
            if event is FEED_CLOSED:
                return
            yield frame(event)
    finally:
        feed.listeners.discard(queue)


def feed_response(feed: Feed, ping_s: float, opening: Opening | None = None) -> StreamingResponse:
    """Stream ``feed``; ``opening`` gives the events a new subscriber gets first
    (the state of work already under way)."""
    return StreamingResponse(
        _stream(feed, ping_s, opening),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache"},
    )
