"""The Telegram channel: long-polls ``getUpdates`` while a bot token is connected.

States (``GET /channels/telegram``): ``stopped`` (no token), ``starting``,
``polling``, ``retrying`` (Telegram could not be reached or answered with a
passing error; polling goes on after a backoff that doubles from
``BACKOFF_START_S`` to ``BACKOFF_MAX_S``), and ``error`` (Telegram refused the
token: 401, 403 or 404 — polling stops until a token is connected again, so a
bad token never becomes a retry loop, and ``GET /services`` shows telegram as
not connected).

The update offset is persisted after each update is handled, keyed by the bot
it belongs to, so after a restart nothing is handled twice and nothing is lost.
An update whose handling fails is logged and skipped, never retried forever.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from famulus.channels.telegram.botapi import BotApi, BotApiError
from famulus.channels.telegram.conversation import Conversations
from famulus.channels.telegram.pairing import normalize
from famulus.chat.manager import RunManager
from famulus.core import Core
from famulus.errors import NotFound
from famulus.llm.external import ExternalServices
from famulus.store.telegram import TelegramStore
from famulus.timeutil import now_iso

log = logging.getLogger(__name__)

SERVICE = "telegram"
OFFSET_KEY = "telegram.offset"
POLL_TIMEOUT_S = 30
EDIT_INTERVAL_S = 1.0
BACKOFF_START_S = 1.0
BACKOFF_MAX_S = 60.0
WELCOME = (
    "Your chat is approved: you can talk to famulus here now. Send /help to see what I can do."
)


class TelegramChannel:
    def __init__(
        self,
        core: Core,
        chat: RunManager,
        services: ExternalServices,
        store: TelegramStore,
        poll_timeout_s: int = POLL_TIMEOUT_S,
        edit_interval_s: float = EDIT_INTERVAL_S,
    ) -> None:
        self.core = core
        self.chat = chat
        self.services = services
        self.store = store
        self.poll_timeout_s = poll_timeout_s
        self.edit_interval_s = edit_interval_s
        self.status = "stopped"
        self.reason: str | None = None
        self.bot_username: str | None = None
        self._task: asyncio.Task[None] | None = None
        self._conversations: Conversations | None = None

    # -- lifecycle -------------------------------------------------------------

    async def start(self) -> None:
        self._launch()

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        self.status, self.reason = "stopped", None

    async def restart(self) -> None:
        await self.stop()
        self._launch()

    def service_changed(self, service: str) -> None:
        """A token was connected or forgotten: poll with what is connected now."""
        if service == SERVICE:
            asyncio.get_running_loop().create_task(self.restart())

    def refused(self) -> bool:
        """Telegram refused the connected token (for ``GET /services``)."""
        return self.status == "error"

    def _launch(self) -> None:
        token = self.services.credential(SERVICE)
        self.bot_username = None
        if token is None:
            self.status, self.reason = "stopped", None
            return
        self.status, self.reason = "starting", None
        self._task = asyncio.get_running_loop().create_task(
            self._run(token), name="famulus-telegram"
        )

    async def _run(self, token: str) -> None:
        api = BotApi(self.core.settings.telegram_base_url, token)
        conversations: Conversations | None = None
        try:
            me = await self._retrying(api.get_me)
            if me is None:
                return
            self.bot_username = me.username
            conversations = Conversations(
                api,
                me.username,
                self.store,
                self.core.sessions,
                self.chat,
                self.core.events,
                self.edit_interval_s,
            )
            self._conversations = conversations
            await self._poll(api, me.id, conversations)
        finally:
            self._conversations = None
            if conversations is not None:
                await conversations.close()
            await api.close()

    async def _retrying(self, call: Any) -> Any:
        """``call()`` until it works; None when the token is refused."""
        backoff = BACKOFF_START_S
        while True:
            try:
                result = await call()
            except BotApiError as exc:
                if exc.fatal:
                    self._refused(exc)
                    return None
                self.status = "retrying"
                self.reason = f"{exc}; trying again in {backoff:.0f} s."
                log.warning("telegram: %s", self.reason)
                await asyncio.sleep(max(backoff, exc.retry_after or 0.0))
                backoff = min(BACKOFF_MAX_S, backoff * 2)
                continue
            self.status, self.reason = "polling", None
            return result

    def _refused(self, exc: BotApiError) -> None:
        self.status = "error"
        self.reason = (
            f"Telegram refused the bot token (HTTP {exc.status}: {exc.description}); "
            "connect a valid token with POST /services/telegram/connect."
        )
        log.error("telegram: %s Polling stopped.", self.reason)

    async def _poll(self, api: BotApi, bot_id: int, conversations: Conversations) -> None:
        offset = await self._offset(bot_id)
        while True:

            async def updates(at: int = offset) -> list[dict[str, Any]]:
                return await api.get_updates(at, self.poll_timeout_s)

            batch = await self._retrying(updates)
            if batch is None:
                return
            for update in batch:
                update_id = update.get("update_id")
                if not isinstance(update_id, int) or update_id < offset:
                    continue
                try:
                    await conversations.handle(update)
                except Exception:
                    log.exception("telegram: update %s could not be handled", update_id)
                offset = update_id + 1
                await self.core.kv.set(OFFSET_KEY, {"bot_id": bot_id, "offset": offset})

    async def _offset(self, bot_id: int) -> int:
        """The stored offset, if it belongs to this bot (update ids are per bot)."""
        stored = await self.core.kv.get(OFFSET_KEY)
        if isinstance(stored, dict) and stored.get("bot_id") == bot_id:
            return int(stored.get("offset") or 0)
        return 0

    # -- the owner's side (the API) --------------------------------------------

    async def describe(self) -> dict[str, Any]:
        now = now_iso()
        return {
            "status": self.status,
            "reason": self.reason,
            "bot_username": self.bot_username,
            "chats": [
                {
                    "chat_id": c.chat_id,
                    "title": c.title,
                    "session_id": c.session_id,
                    "approved_at": c.approved_at,
                }
                for c in await self.store.chats()
            ],
            "pairings": [
                {
                    "code": p.code,
                    "chat_id": p.chat_id,
                    "title": p.title,
                    "created_at": p.created_at,
                    "expires_at": p.expires_at,
                }
                for p in await self.store.pairings(now)
            ],
        }

    async def approve(self, code: str) -> dict[str, Any]:
        found = await self.store.approve(normalize(code), now_iso())
        if found is None:
            raise NotFound(f"No open pairing request with code '{normalize(code)[:16]}'.")
        log.info("telegram: chat %s approved", found.chat_id)
        conversations = self._conversations
        if conversations is not None:  # best effort, and not while the owner waits
            conversations.spawn(conversations.say(found.chat_id, WELCOME))
        return {"status": "approved", "chat_id": found.chat_id, "title": found.title}

    async def deny(self, code: str) -> None:
        if not await self.store.deny(normalize(code)):
            raise NotFound(f"No open pairing request with code '{normalize(code)[:16]}'.")

    async def revoke(self, chat_id: int) -> None:
        if not await self.store.remove_chat(chat_id):
            raise NotFound(f"No approved Telegram chat with id {chat_id}.")
        log.info("telegram: chat %s removed", chat_id)
