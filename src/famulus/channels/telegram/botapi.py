"""A small async client for the Telegram Bot API methods the channel uses.

The token is part of every URL (``/bot<token>/method``), so no error raised
here ever carries a URL or the exception text of the HTTP library (which may
include it): only the method, the HTTP status and Telegram's description.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import httpx

from famulus.notify.senders import retry_after, telegram_retry_after

# Telegram answers these when the token is wrong or the bot was deleted:
# polling cannot succeed until the owner connects a new token.
FATAL_STATUSES = (401, 403, 404)
REQUEST_TIMEOUT_S = 20.0
# A rate limit shorter than this is waited out once; a longer one is given up.
MAX_RETRY_WAIT_S = 10.0


class BotApiError(Exception):
    """Telegram refused a call (``status`` is the HTTP status, 0 when it could
    not be reached); ``retry_after``: seconds Telegram asked us to wait."""

    def __init__(
        self, method: str, status: int, description: str, retry_after: float | None = None
    ) -> None:
        super().__init__(f"Telegram {method}: {description}")
        self.method = method
        self.status = status
        self.description = description
        self.retry_after = retry_after

    @property
    def fatal(self) -> bool:
        """The token is refused: trying again cannot help."""
        return self.status in FATAL_STATUSES

    @property
    def unreachable(self) -> bool:
        return self.status == 0


@dataclass(frozen=True)
class BotUser:
    id: int
    username: str


class BotApi:
    def __init__(self, base_url: str, token: str) -> None:
        self.base = base_url.rstrip("/")
        self._token = token
        self._http = httpx.AsyncClient(timeout=REQUEST_TIMEOUT_S)

    async def close(self) -> None:
        await self._http.aclose()

    async def call(self, method: str, payload: dict[str, Any], timeout: float | None = None) -> Any:
        """POST one method and return its ``result``; a 429 with a short wait is
        waited out and tried once more."""
        try:
            return await self._call(method, payload, timeout)
        except BotApiError as exc:
            wait = exc.retry_after
            if exc.status != 429 or wait is None or wait > MAX_RETRY_WAIT_S:
                raise
            await asyncio.sleep(wait)
            return await self._call(method, payload, timeout)

    async def _call(self, method: str, payload: dict[str, Any], timeout: float | None) -> Any:
        url = f"{self.base}/bot{self._token}/{method}"
        try:
            response = await self._http.post(
                url, json=payload, timeout=timeout or REQUEST_TIMEOUT_S
            )
        except httpx.HTTPError as exc:
            raise BotApiError(method, 0, f"not reachable ({type(exc).__name__})") from None
        try:
            body = response.json()
        except ValueError:
            body = {}
        if response.status_code >= 400 or not isinstance(body, dict) or not body.get("ok"):
            description = body.get("description") if isinstance(body, dict) else None
            raise BotApiError(
                method,
                response.status_code,
                str(description or f"HTTP {response.status_code}")[:300],
                retry_after(response) or telegram_retry_after(response),
            )
        return body.get("result")

    async def get_me(self) -> BotUser:
        me = await self.call("getMe", {})
        return BotUser(int(me["id"]), str(me.get("username") or ""))

    async def get_updates(self, offset: int, timeout_s: int) -> list[dict[str, Any]]:
        payload = {
            "offset": offset,
            "timeout": timeout_s,
            "allowed_updates": ["message", "callback_query"],
        }
        result = await self._call("getUpdates", payload, timeout_s + REQUEST_TIMEOUT_S)
        if not isinstance(result, list):  # not the Bot API: back off, do not spin
            raise BotApiError("getUpdates", 502, "the answer was not a list of updates")
        return [u for u in result if isinstance(u, dict)]

    async def send_message(
        self, chat_id: int, text: str, html: bool = False, buttons: Any = None
    ) -> int:
        """Send and return the new message's id."""
        payload = _text_payload(text, html, buttons)
        sent = await self.call("sendMessage", {"chat_id": chat_id, **payload})
        return int(sent["message_id"])

    async def edit_message(
        self, chat_id: int, message_id: int, text: str, html: bool = False, buttons: Any = None
    ) -> None:
        payload = _text_payload(text, html, buttons)
        try:
            await self.call(
                "editMessageText", {"chat_id": chat_id, "message_id": message_id, **payload}
            )
        except BotApiError as exc:
            if "not modified" not in exc.description:  # same text: nothing to do
                raise

    async def answer_callback(self, callback_id: str, text: str) -> None:
        await self.call("answerCallbackQuery", {"callback_query_id": callback_id, "text": text})

    async def send_typing(self, chat_id: int) -> None:
        await self.call("sendChatAction", {"chat_id": chat_id, "action": "typing"})

    async def download_file(self, file_id: str) -> bytes:
        """getFile, then the file itself from ``{base}/file/bot<token>/<path>``."""
        info = await self.call("getFile", {"file_id": file_id})
        path = str(info.get("file_path") or "")
        if not path:
            raise BotApiError("getFile", 400, "no file path")
        try:
            response = await self._http.get(f"{self.base}/file/bot{self._token}/{path}")
        except httpx.HTTPError as exc:
            raise BotApiError("file", 0, f"not reachable ({type(exc).__name__})") from None
        if response.status_code >= 400:
            raise BotApiError("file", response.status_code, f"HTTP {response.status_code}")
        return response.content


def _text_payload(text: str, html: bool, buttons: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {"text": text, "link_preview_options": {"is_disabled": True}}
    if html:
        payload["parse_mode"] = "HTML"
    if buttons is not None:
        payload["reply_markup"] = {"inline_keyboard": buttons}
    return payload
