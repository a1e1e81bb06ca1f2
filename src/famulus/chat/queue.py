"""A message sent while a run is active, waiting for the next turn boundary,
and its withdrawal before the run takes it in."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic_ai.messages import UserContent

from famulus.agent.history import user_content
from famulus.errors import Conflict, NotFound
from famulus.events import EventHub
from famulus.sessions.service import SessionService
from famulus.store.pending import PendingStore


@dataclass(frozen=True)
class QueuedMessage:
    text: str
    images: list[dict[str, str]] | None
    client_id: str | None
    # Its row in pending_messages (store/pending.py) until it reaches history.
    pending_id: int | None = None

    def content(self) -> str | list[UserContent]:
        return user_content(self.text, self.images)


@dataclass(frozen=True)
class Withdrawn:
    session_id: str
    run_id: str
    client_id: str
    message: str
    images: list[dict[str, Any]] | None


class Withdrawing(Protocol):
    """A live run, as far as withdrawing goes (``chat.run.Run`` has it)."""

    def withdraw(self, pending_id: int) -> bool: ...


class QueueService:
    """Withdraws queued messages. The run's own queue decides: a message it has
    already put into a model request cannot be taken back (409); one it still
    holds leaves both that queue and the database, so no path (ingestion, a
    cancel's "unanswered" rows, start-up recovery) can bring it back."""

    def __init__(
        self,
        sessions: SessionService,
        pending: PendingStore,
        events: EventHub,
        active: Mapping[str, Withdrawing],
    ) -> None:
        self.sessions = sessions
        self.pending = pending
        self.events = events
        self.active = active  # run_id -> live run: the run manager's own map
        # One withdrawal at a time: a second one for the same message must see the
        # first one's result, not a row that is about to go.
        self._lock = asyncio.Lock()

    async def withdraw(self, session_id: str, client_id: str) -> Withdrawn:
        session = await self.sessions.get(session_id)
        async with self._lock:
            pending = await self.pending.waiting(session.session_id, client_id)
            if pending is None:
                if await self.pending.taken_in(session.session_id, client_id):
                    raise Conflict(_taken_in(client_id))
                raise NotFound(
                    f"No message queued with client_id '{client_id[:64]}' is waiting in this "
                    "session (it was never queued, or was already withdrawn)."
                )
            run = self.active.get(pending.run_id)
            if run is None or not run.withdraw(pending.id):
                raise Conflict(_taken_in(client_id))
            await self.pending.drop(pending.id)
        await self.events.publish(
            session.session_id, "message_withdrawn", run_id=pending.run_id, client_id=client_id
        )
        return Withdrawn(
            session.session_id, pending.run_id, client_id, pending.content, pending.images
        )


def _taken_in(client_id: str) -> str:
    return (
        f"The message queued with client_id '{client_id[:64]}' was already taken in by "
        "the run; once the run has finished, POST /sessions/{id}/revert removes it."
    )
