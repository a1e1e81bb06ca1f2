"""GET /chat/events/{session_id}: the session's Server-Sent Events stream.

Order of work: subscribe to live events first, then replay the log after the
client's last id, then drain live events skipping any already replayed.
Without a cursor (no ``Last-Event-ID``, no ``?after=``) the stream starts live,
plus the events of a run still in progress so a client joining mid-run can
draw it; history is ``/session/history``'s job. That
order leaves no gap between replay and live. A slow subscriber whose queue
overflowed re-reads the log instead of losing events.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

from fastapi import APIRouter, Depends, Header, Query
from fastapi.responses import StreamingResponse

from famulus.api.deps import container
from famulus.api.schemas import MAX_ROW_ID
from famulus.errors import InvalidRequest
from famulus.events import CLOSED, Event, EventHub, Subscription
from famulus.wiring import Container

router = APIRouter(tags=["chat"])


def format_event(event: Event) -> str:
    data = json.dumps(event.data, separators=(",", ":"), ensure_ascii=False)
    head = f"id: {event.seq}\n" if event.seq is not None else ""
    return f"{head}event: {event.type}\ndata: {data}\n\n"


def _cursor(last_event_id: str | None, after: int | None) -> int | None:
    """The client's cursor, or None when it sent neither ``after`` nor Last-Event-ID."""
    if after is not None:
        return after
    if last_event_id is None or not last_event_id.strip():
        return None
    try:
        value = max(0, int(last_event_id.strip()))
    except ValueError as exc:
        raise InvalidRequest(
            "Last-Event-ID must be an event id (an integer).", loc=["header", "last-event-id"]
        ) from exc
    if value > MAX_ROW_ID:
        raise InvalidRequest(
            f"Last-Event-ID must be at most {MAX_ROW_ID}.", loc=["header", "last-event-id"]
        )
    return value


async def _stream(
    hub: EventHub, session_id: str, last: int, stream_deltas: bool, ping_s: float
) -> AsyncIterator[str]:
    sub: Subscription = hub.subscribe(session_id)
    try:
        yield ": connected\n\n"
        for event in await hub.replay(session_id, last):
            last = event.seq or last
            yield format_event(event)
        while True:
            if sub.lagged:
                sub.lagged = False
                while not sub.queue.empty():
                    sub.queue.get_nowait()
                for event in await hub.replay(session_id, last):
                    last = event.seq or last
                    yield format_event(event)
            try:
                event = await asyncio.wait_for(sub.queue.get(), timeout=ping_s)
            except TimeoutError:
                yield ": ping\n\n"
                continue
            if event.type == CLOSED:
                return
            if event.seq is None:
                if stream_deltas:
                    yield format_event(event)
                continue
            if event.seq <= last:
                continue
            last = event.seq
            yield format_event(event)
    finally:
        hub.unsubscribe(session_id, sub)


@router.get(
    "/chat/events/{session_id}",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}, "description": "SSE stream"}},
)
async def chat_events(
    session_id: str,
    after: int | None = Query(
        default=None, ge=0, le=MAX_ROW_ID, description="Replay events after this id"
    ),
    stream: bool = Query(default=False, description="Also send live text_delta events"),
    last_event_id: str | None = Header(default=None),
    c: Container = Depends(container),
) -> StreamingResponse:
    await c.sessions.get(session_id)
    start = _cursor(last_event_id, after)
    if start is None:  # no cursor: live from now, plus the run in progress
        running = c.chat.in_progress(session_id)
        start = await c.events.live_start(session_id, running)
    body = _stream(c.events, session_id, start, stream, c.settings.sse_ping_interval_s)
    return StreamingResponse(
        body,
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
