"""EventHub: persist an event, then fan it out to every live subscriber.

Persist-then-publish means a client that reconnects with ``Last-Event-ID``
can always replay what it missed from the database; live-only events
(``text_delta``) skip the log and carry no sequence number.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from famulus.store.db import WriteOp
from famulus.store.events import EventStore

log = logging.getLogger(__name__)

_QUEUE_MAX = 10_000
# Offered to every subscriber when the server shuts down: streams end at once
# instead of holding the shutdown until the server gives up on them.
CLOSED = "__closed__"


@dataclass(frozen=True)
class Event:
    type: str
    data: dict[str, Any]
    seq: int | None  # None for live-only events


class Subscription:
    """A subscriber's queue. Overflow marks it lagged; it then re-reads the log."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[Event] = asyncio.Queue(maxsize=_QUEUE_MAX)
        self.lagged = False

    def offer(self, event: Event) -> None:
        try:
            self.queue.put_nowait(event)
        except asyncio.QueueFull:
            self.lagged = True


class EventHub:
    def __init__(self, store: EventStore) -> None:
        self.store = store
        self._subs: dict[str, set[Subscription]] = defaultdict(set)
        self._locks: dict[str, asyncio.Lock] = defaultdict(asyncio.Lock)

    async def publish(self, session_id: str, type_: str, /, **fields: Any) -> Event:
        """Persist and broadcast one event; ``type`` is also put in the payload."""
        return await self.publish_with((), session_id, type_, **fields)

    async def publish_with(
        self, ops: Sequence[WriteOp], session_id: str, type_: str, /, **fields: Any
    ) -> Event:
        """Like ``publish``, with the state change the event announces (store write
        ops) in the same transaction: one trip to the writer, and no event without
        its change or change without its event."""
        data = {"type": type_, **fields}
        # Lock per session so broadcast order equals sequence order.
        async with self._locks[session_id]:
            row = await self.store.append(session_id, type_, data, with_ops=ops)
            event = Event(type_, data, row.seq)
            for sub in list(self._subs.get(session_id, ())):
                sub.offer(event)
        return event

    async def live_start(self, session_id: str, run_ids: list[str]) -> int:
        return await self.store.live_start(session_id, run_ids)

    async def close_all(self) -> None:
        """End every live stream (the server is stopping; clients reconnect and replay)."""
        closing = Event(CLOSED, {}, None)
        for subs in list(self._subs.values()):
            for sub in list(subs):
                try:
                    sub.queue.put_nowait(closing)
                except asyncio.QueueFull:
                    sub.lagged = True

    def publish_live(self, session_id: str, type_: str, /, **fields: Any) -> None:
        """Broadcast without persisting (token deltas)."""
        event = Event(type_, {"type": type_, **fields}, None)
        for sub in list(self._subs.get(session_id, ())):
            sub.offer(event)

    def subscribe(self, session_id: str) -> Subscription:
        sub = Subscription()
        self._subs[session_id].add(sub)
        return sub

    def unsubscribe(self, session_id: str, sub: Subscription) -> None:
        subs = self._subs.get(session_id)
        if subs is not None:
            subs.discard(sub)
            if not subs:
                self._subs.pop(session_id, None)

    def subscriber_count(self, session_id: str) -> int:
        return len(self._subs.get(session_id, ()))

    async def replay(self, session_id: str, after_seq: int) -> list[Event]:
        rows = await self.store.after(session_id, after_seq, limit=100_000)
        return [Event(r.type, r.data, r.seq) for r in rows]

    def forget(self, session_id: str) -> None:
        """A session was removed: end its open streams and drop its lock."""
        self._locks.pop(session_id, None)
        for sub in list(self._subs.get(session_id, ())):
            try:
                sub.queue.put_nowait(Event(CLOSED, {}, None))
            except asyncio.QueueFull:
                sub.lagged = True
