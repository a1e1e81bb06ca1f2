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
"""

from __future__ import annotations

import asyncio
import re

from famulus.sessions.service import NAME_MAX, SessionService
from famulus.store.openai_sessions import OpenAISessionStore

NAME_PREFIX = "API: "
OPEN_WEBUI_PREFIX = "Open WebUI: "
TITLE_CHARS = 60
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
    ) -> str:
        """The session id for a request (see the module's rule); ``first_text``
        names a new Open WebUI chat's session."""
        if explicit:
            return (await self.sessions.get_active(explicit)).session_id
        if chat_id:
            return await self._mapped("openwebui:" + chat_id, _title(first_text, chat_id))
        if user:
            return await self._mapped("user:" + user, NAME_PREFIX + user)
        name = client_name(user_agent)
        return await self._mapped("client:" + name, NAME_PREFIX + name)

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


def _title(text: str, chat_id: str) -> str:
    """``Open WebUI: <the first line of the first message>``, cut to a title."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    if len(line) > TITLE_CHARS:
        line = line[: TITLE_CHARS - 1].rstrip() + "…"
    return OPEN_WEBUI_PREFIX + (line or f"chat {chat_id[:8]}")
