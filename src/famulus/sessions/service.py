"""Session rules: lifecycle (active ⇄ archived → removed), naming, history.

Lifecycle changes are announced on the session's event stream so every client
showing the session stays in step.

A session's origin is ``chat`` (a person's conversation) or ``automation`` (an
automation's own session). The default session and the recent list only
consider chat sessions, so automation runs never take over the conversation;
every session stays reachable by id.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass

from famulus.errors import Conflict, NotFound
from famulus.events import EventHub
from famulus.hooks import Hooks
from famulus.store import history_edits
from famulus.store.history_edits import HistoryEdits
from famulus.store.sessions import MessageRow, SessionRow, SessionStore
from famulus.timeutil import now_iso

log = logging.getLogger(__name__)

DEFAULT_NAME = "New session"
RECENT_LIMIT = 20
CHAT = "chat"
AUTOMATION = "automation"
ORIGINS = (CHAT, AUTOMATION)
ID_QUOTE_MAX = 64
NAME_MAX = 200
BRANCH_SUFFIX = " (branch)"


def new_session_id() -> str:
    return "s_" + secrets.token_hex(8)


def quote_id(session_id: str) -> str:
    """``session_id`` for an error message: at most ID_QUOTE_MAX characters."""
    if len(session_id) <= ID_QUOTE_MAX:
        return session_id
    return session_id[: ID_QUOTE_MAX - 1] + "…"


def branch_name(source_name: str) -> str:
    """``<source name> (branch)``, the source name cut so the whole fits NAME_MAX."""
    return source_name[: NAME_MAX - len(BRANCH_SUFFIX)] + BRANCH_SUFFIX


@dataclass(frozen=True)
class Reverted:
    """What a revert removed; ``first`` is the earliest removed user message (the
    text a client puts back into its input box)."""

    session_id: str
    turns: int
    removed: list[MessageRow]

    @property
    def first(self) -> MessageRow:
        return self.removed[0]


class SessionService:
    def __init__(self, store: SessionStore, events: EventHub, hooks: Hooks) -> None:
        self.store = store
        self.edits = HistoryEdits(store.db)
        self.events = events
        self.hooks = hooks  # ``before_remove`` / ``before_clear`` run here

    async def create(self, name: str | None = None, origin: str = CHAT) -> SessionRow:
        if origin not in ORIGINS:
            raise ValueError(f"unknown session origin {origin!r}")
        return await self.store.create(new_session_id(), name or DEFAULT_NAME, origin)

    async def find(self, session_id: str) -> SessionRow | None:
        """The session, or None when there is none (``get`` raises NotFound)."""
        return await self.store.get(session_id)

    async def messages(
        self, session_id: str, *, roles: tuple[str, ...] | None = None, after_id: int = 0
    ) -> list[MessageRow]:
        """The session's messages in order, those after message ``after_id`` and
        of ``roles`` only (None: every role). An unknown session has none; use
        ``find`` or ``get`` where that must be told apart."""
        return await self.store.messages(session_id, roles=roles, after_id=after_id)

    async def get(self, session_id: str) -> SessionRow:
        row = await self.store.get(session_id)
        if row is None:
            raise NotFound(
                f"No session with id '{quote_id(session_id)}'. List sessions with GET /sessions."
            )
        return row

    async def get_active(self, session_id: str) -> SessionRow:
        """A session that can take new messages (not archived)."""
        row = await self.get(session_id)
        if row.archived_at is not None:
            quoted = quote_id(session_id)
            raise Conflict(
                f"Session '{quoted}' is archived; restore it with "
                f"POST /sessions/{quoted}/restore first."
            )
        return row

    async def current(self, session_id: str | None = None) -> SessionRow:
        """The given session (any origin), else the most recently active chat
        session, else a new chat session."""
        if session_id:
            return await self.get(session_id)
        row = await self.store.most_recent_active(CHAT)
        return row if row is not None else await self.create()

    async def recent(
        self, limit: int = RECENT_LIMIT, offset: int = 0, origin: str | None = CHAT
    ) -> list[SessionRow]:
        """Active sessions, most recently active first; ``origin=None``: every origin."""
        limit = min(limit, RECENT_LIMIT)
        return await self.store.page(archived=False, limit=limit, offset=offset, origin=origin)

    async def archived(
        self, limit: int = 200, offset: int = 0, origin: str | None = CHAT
    ) -> list[SessionRow]:
        return await self.store.page(archived=True, limit=limit, offset=offset, origin=origin)

    async def rename(self, session_id: str, name: str) -> SessionRow:
        await self.get(session_id)
        row = await self.store.update(session_id, name=name)
        if row is None:  # removed by a request that ran in between
            raise NotFound(f"No session with id '{session_id}'.")
        await self.events.publish(session_id, "session_renamed", session_id=session_id, name=name)
        return row

    async def add_source(self, session_id: str, source: str) -> None:
        """Record that the agent drew on ``source`` in this session (once each)."""
        await self.store.add_source(session_id, source)

    async def archive(self, session_id: str) -> SessionRow:
        row = await self.get(session_id)
        if row.archived_at is not None:
            return row
        row2 = await self.store.update(session_id, archived_at=now_iso())
        if row2 is None:  # removed by a request that ran in between
            raise NotFound(f"No session with id '{session_id}'.")
        await self.events.publish(session_id, "session_archived", session_id=session_id)
        return row2

    async def restore(self, session_id: str) -> SessionRow:
        row = await self.get(session_id)
        if row.archived_at is None:
            return row
        row2 = await self.store.update(session_id, archived_at=None, last_activity=now_iso())
        if row2 is None:  # removed by a request that ran in between
            raise NotFound(f"No session with id '{session_id}'.")
        await self.events.publish(session_id, "session_restored", session_id=session_id)
        return row2

    async def delete_permanently(self, session_id: str) -> None:
        await self.get(session_id)
        for hook in self.hooks.before_remove:
            await hook(session_id)
        await self.store.delete(session_id)
        self.events.forget(session_id)

    async def clear(self, session_id: str | None) -> SessionRow:
        row = await self.current(session_id)
        for hook in self.hooks.before_clear:
            await hook(row.session_id)
        await self.store.clear_messages(row.session_id)
        await self.events.publish(row.session_id, "session_cleared", session_id=row.session_id)
        return row

    async def history(self, session_id: str | None) -> tuple[SessionRow, list[MessageRow]]:
        row = await self.current(session_id)
        messages = await self.messages(row.session_id, roles=("user", "assistant", "tool"))
        return row, messages

    async def _branched(self, session_id: str) -> None:
        """The ``after_branch`` hooks; the branch exists whatever they do."""
        for hook in self.hooks.after_branch:
            try:
                await hook(session_id)
            except Exception:
                log.exception("an after_branch hook failed for session %s", session_id)

    # -- undo and branch ----------------------------------------------------

    async def revert(self, session_id: str, turns: int = 1) -> Reverted:
        """Remove the last ``turns`` turns so the model no longer sees them. Refused
        while a run of the session is active: its next write would land after a
        hole in the conversation it is part of."""
        await self.get_active(session_id)
        result = await self.edits.revert(session_id, turns)
        quoted = quote_id(session_id)
        if result.status == history_edits.MISSING:  # deleted by a request in between
            raise NotFound(f"No session with id '{quoted}'.")
        if result.status == history_edits.BUSY:
            raise Conflict(
                f"A run is active in session '{quoted}'; revert after it finishes "
                "or cancel it with POST /cancel."
            )
        if result.status == history_edits.EMPTY:
            raise Conflict(f"Session '{quoted}' has no turn to revert.")
        reverted = Reverted(session_id, result.turns, result.removed)
        await self.events.publish(
            session_id,
            "session_reverted",
            session_id=session_id,
            turns=reverted.turns,
            message_ids=[m.id for m in reverted.removed],
        )
        return reverted

    async def branch(
        self, session_id: str, message_id: int | None = None, name: str | None = None
    ) -> SessionRow:
        """A new chat session whose history is a copy of this one's up to and
        including ``message_id`` (all of it by default); the original is untouched."""
        source = await self.get(session_id)
        new_id = new_session_id()
        row = await self.edits.branch(
            session_id, message_id, new_id, name or branch_name(source.name)
        )
        if row is not None:
            await self._branched(row.session_id)
            return row
        quoted = quote_id(session_id)
        if message_id is None or await self.find(session_id) is None:
            raise NotFound(f"No session with id '{quoted}' (it was just deleted).")
        raise NotFound(
            f"Session '{quoted}' has no message with id {message_id}; its messages and "
            f"their ids are listed by GET /session/history?session_id={quoted}."
        )
