"""Feed: live-only fan-out of small event dicts to whoever is listening now.

Unlike the session ``EventHub`` nothing is stored and nothing is replayed: a
listener that was not connected does not get the event later, which suits
news that is only worth having while it is current (an automation started, a
re-index advanced). Each listener is a queue; ``api/feeds.py`` streams one as
Server-Sent Events, so the areas that publish stay free of HTTP.
"""

from __future__ import annotations

import asyncio
from typing import Any

# Put on a listener's queue to end its stream (compared by identity).
FEED_CLOSED: dict[str, Any] = {"type": "closed"}


class Feed:
    def __init__(self) -> None:
        self.listeners: set[asyncio.Queue[dict[str, Any]]] = set()

    def publish(self, type_: str, /, **fields: Any) -> None:
        """Send ``{"type": type_, **fields}`` to every listener."""
        self.broadcast({"type": type_, **fields})

    def broadcast(self, event: dict[str, Any]) -> None:
        for queue in list(self.listeners):
            queue.put_nowait(event)

    async def close(self) -> None:
        """End every stream at once when the server begins to stop, so shutdown
        never waits on a feed that would stay open forever."""
        for queue in list(self.listeners):
            queue.put_nowait(FEED_CLOSED)
