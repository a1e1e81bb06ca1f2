"""One answer in one chat, streamed by editing its message(s) in place.

Telegram allows about one message per second per chat (edits included) and
answers 429 with a wait beyond that, so the shown text is brought up to date at
most once per ``interval_s``: a change arriving sooner is shown when the
interval is over. An answer longer than one message continues in a new
message; the earlier ones are left as they are. If Telegram cannot parse the
HTML of a part (it should always parse; this is the safety net), that part is
shown as plain text instead. The final text is always shown, whatever came
before.
"""

from __future__ import annotations

import asyncio
import logging
import time

from famulus.channels.telegram.botapi import BotApi, BotApiError
from famulus.channels.telegram.markdown import split_markdown, to_html

log = logging.getLogger(__name__)

FINAL_TRIES = 3
MAX_FINAL_WAIT_S = 30.0


class Reply:
    def __init__(self, api: BotApi, chat_id: int, interval_s: float) -> None:
        self.api = api
        self.chat_id = chat_id
        self.interval_s = interval_s
        self.text = ""
        self.message_ids: list[int] = []
        self._shown: list[str] = []  # what each message shows now
        self._next_at = 0.0
        self._timer: asyncio.Task[None] | None = None
        self._sending = False  # the timer is sending (no longer just waiting for the rate)
        self._lock = asyncio.Lock()

    def update(self, text: str) -> None:
        """Show ``text`` as soon as the rate allows (the newest text wins)."""
        self.text = text
        if self._timer is None or self._timer.done():
            delay = max(0.0, self._next_at - time.monotonic())
            self._timer = asyncio.create_task(self._later(delay))

    async def _later(self, delay: float) -> None:
        await asyncio.sleep(delay)
        self._sending = True
        try:
            await self._sync()
        except BotApiError as exc:
            # A live edit that failed is simply made again later.
            log.warning("telegram: a streamed edit failed: %s", exc)
            self._next_at = time.monotonic() + max(self.interval_s, exc.retry_after or 0.0)
        finally:
            self._sending = False

    async def finish(self, text: str) -> None:
        """Show the final ``text``; a rate limit is waited out a few times."""
        if self._timer is not None:
            # Only a waiting update is called off: one already sending must
            # finish, or the message it sends would not be known and a second
            # one would be sent.
            if not self._sending:
                self._timer.cancel()
            await asyncio.gather(self._timer, return_exceptions=True)
        self.text = text
        for attempt in range(FINAL_TRIES):
            try:
                await self._sync()
                return
            except BotApiError as exc:
                if exc.fatal or attempt == FINAL_TRIES - 1:
                    log.warning("telegram: the final answer could not be shown: %s", exc)
                    return
                await asyncio.sleep(min(MAX_FINAL_WAIT_S, exc.retry_after or self.interval_s))

    async def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    async def _sync(self) -> None:
        async with self._lock:
            parts = split_markdown(self.text) if self.text.strip() else []
            for n, part in enumerate(parts):
                await self._show(n, part)
            self._next_at = time.monotonic() + self.interval_s

    async def _show(self, n: int, markdown: str) -> None:
        rendered = to_html(markdown)
        if n < len(self._shown) and self._shown[n] in (rendered, markdown):
            return
        try:
            await self._put(n, rendered, html=True)
        except BotApiError as exc:
            if exc.status != 400 or "parse" not in exc.description:
                raise
            await self._put(n, markdown, html=False)
            rendered = markdown
        if n < len(self._shown):
            self._shown[n] = rendered
        else:
            self._shown.append(rendered)

    async def _put(self, n: int, text: str, html: bool) -> None:
        if n < len(self.message_ids):
            await self.api.edit_message(self.chat_id, self.message_ids[n], text, html=html)
        else:
            self.message_ids.append(await self.api.send_message(self.chat_id, text, html=html))
