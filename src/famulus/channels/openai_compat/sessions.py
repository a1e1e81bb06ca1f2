"""Which famulus session an OpenAI-compatible request talks to.

The rule, first match wins:

1. the ``X-Famulus-Session`` header names an existing session: that one;
2. the ``X-OpenWebUI-Chat-Id`` header (Open WebUI sends it with
   ``ENABLE_FORWARD_USER_INFO_HEADERS=true``): one session per Open WebUI
   chat, named after the chat's first message;
3. the body's ``user`` names a person or conversation: the session kept for
   that name (created on first use, named ``API: <user>``);
4. otherwise one session per API client, the client named by its
   User-Agent without version numbers (``OpenAI/Python 1.54.0`` is
   ``OpenAI/Python``), so an upgrade of the client keeps its session.

A mapped session that was archived or removed is replaced by a new one on the
next request (the person put it away; a client cannot restore it).

An Open WebUI chat's session *is* that conversation, so it follows the
client's regenerate and edit (``follow_conversation``): when the request's
user messages before the last are the session's first user messages (at
least one of them, or the last one too: a regenerate) but the session has as
many or more, the client went back, and the session's turns from there on
are reverted before the new message is answered. Only turns this endpoint
started are reverted (their messages carry a ``CLIENT_ID_PREFIX`` client
id); when the two disagree anywhere, or a turn came from elsewhere (the web
client), nothing is reverted.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass

from famulus.sessions.service import NAME_MAX, SessionService
from famulus.store.openai_sessions import OpenAISessionStore

NAME_PREFIX = "API: "
OPEN_WEBUI_PREFIX = "Open WebUI: "
TITLE_CHARS = 60
CLIENT_ID_PREFIX = "openai-"  # the client_id of every message this endpoint submits
UNKNOWN_CLIENT = "unknown client"
CLIENT_NAME_MAX = 100
_COMMENT = re.compile(r"\([^)]*\)")


def client_name(user_agent: str | None) -> str:
    """The User-Agent without comments and versions: ``Python/3.11 aiohttp/3.9``
    is ``Python aiohttp``."""
    words: list[str] = []
    for token in _COMMENT.sub(" ", user_agent or "").split():
        if token[:1].isdigit():
            continue  # a bare version ("OpenAI/Python 1.54.0")
        product, _, version = token.partition("/")
        words.append(product if version[:1].isdigit() or not version else token)
    return " ".join(words)[:CLIENT_NAME_MAX].strip() or UNKNOWN_CLIENT


@dataclass(frozen=True)
class Picked:
    session_id: str
    conversation: bool  # the session is one client conversation (an Open WebUI chat)


class SessionMap:
    def __init__(self, sessions: SessionService, store: OpenAISessionStore) -> None:
        self.sessions = sessions
        self.store = store
        self._lock = asyncio.Lock()  # two first requests of one user make one session

    async def resolve(
        self,
        explicit: str | None,
        user: str | None,
        user_agent: str | None,
        *,
        chat_id: str | None = None,
        first_text: str = "",
    ) -> Picked:
        """The session for a request (see the module's rule); ``first_text``
        names a new Open WebUI chat's session."""
        if explicit:
            return Picked((await self.sessions.get_active(explicit)).session_id, False)
        if chat_id:
            title = _title(first_text, chat_id)
            return Picked(await self._mapped("openwebui:" + chat_id, title), True)
        if user and user.strip():  # a blank `user` names nobody: the client's session
            return Picked(await self._mapped("user:" + user, NAME_PREFIX + user), False)
        name = client_name(user_agent)
        return Picked(await self._mapped("client:" + name, NAME_PREFIX + name), False)

    async def follow_conversation(self, session_id: str, sent: list[str]) -> int:
        """Revert the turns the client went back over (regenerate, edit); how many."""
        rows = await self.sessions.messages(session_id, roles=("user",))
        turns = went_back(sent, [r.content for r in rows])
        ours = all(
            str(r.meta.get("client_id", "")).startswith(CLIENT_ID_PREFIX)
            for r in rows[len(rows) - turns :]
        )
        if turns == 0 or not ours:
            return 0
        await self.sessions.revert(session_id, turns)
        return turns

    async def _mapped(self, key: str, name: str) -> str:
        async with self._lock:
            session_id = await self.store.get(key)
            if session_id is not None:
                row = await self.sessions.find(session_id)
                if row is not None and row.archived_at is None:
                    return row.session_id
            row = await self.sessions.create(name[:NAME_MAX])
            await self.store.put(key, row.session_id)
            return row.session_id


def went_back(sent: list[str], kept: list[str]) -> int:
    """How many of the session's last turns the client's conversation left out
    (0: it goes on from the end, or the two do not match)."""
    n = len(sent)
    if n == 0 or n > len(kept) or sent[:-1] != kept[: n - 1]:
        return 0
    if n == 1 and sent[0] != kept[0]:
        return 0  # one unrelated message (a title request) is no edit of the first
    return len(kept) - n + 1


def _title(text: str, chat_id: str) -> str:
    """``Open WebUI: <the first line of the first message>``, cut to a title."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    if len(line) > TITLE_CHARS:
        line = line[: TITLE_CHARS - 1].rstrip() + "…"
    return OPEN_WEBUI_PREFIX + (line or f"chat {chat_id[:8]}")
