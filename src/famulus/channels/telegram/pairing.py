"""One-time codes with which the owner lets a Telegram chat talk to famulus.

A chat nobody approved yet is a stranger: whatever it writes never reaches the
agent. It is answered with a short code instead, which the owner approves over
the API or in the web client's Settings. To keep strangers from flooding the
owner (or the bot from being used to spam), a chat keeps the same code until
it expires, is answered at most once per ``REPLY_EVERY_S``, and at most
``MAX_OPEN`` requests are open at a time.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from famulus.store.telegram import PairingRow, TelegramStore
from famulus.timeutil import iso, utcnow

# No 0/O, 1/I/L: the owner may read the code off a phone screen and type it.
ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 8
EXPIRES_AFTER = timedelta(hours=1)
MAX_OPEN = 20
REPLY_EVERY_S = 60.0


def new_code() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))


def normalize(code: str) -> str:
    """Codes are compared without case or surrounding blanks."""
    return code.strip().upper()


@dataclass(frozen=True)
class Request:
    """What to tell a stranger: their code, or None when no more requests fit."""

    code: str | None
    expires_at: str | None


class Pairing:
    def __init__(self, store: TelegramStore, clock: Callable[[], float] = time.monotonic) -> None:
        self.store = store
        self.clock = clock
        self._replied: dict[int, float] = {}  # chat id -> when it was last answered

    def may_reply(self, chat_id: int) -> bool:
        """At most one answer per stranger chat per ``REPLY_EVERY_S``."""
        now = self.clock()
        last = self._replied.get(chat_id)
        if last is not None and now - last < REPLY_EVERY_S:
            return False
        self._replied = {c: t for c, t in self._replied.items() if now - t < REPLY_EVERY_S}
        self._replied[chat_id] = now
        return True

    async def request(self, chat_id: int, title: str) -> Request:
        """The chat's open code, or a new one."""
        now = utcnow()
        found = await self.store.pairing_for(chat_id, iso(now))
        if found is not None:
            return Request(found.code, found.expires_at)
        row = PairingRow(new_code(), chat_id, title[:200], iso(now), iso(now + EXPIRES_AFTER))
        if not await self.store.add_pairing(row, MAX_OPEN):
            return Request(None, None)
        return Request(row.code, row.expires_at)


def stranger_text(request: Request) -> str:
    if request.code is None:
        return (
            "This famulus is private, and too many access requests are waiting. "
            "Please try again later."
        )
    return (
        "This famulus is private. To ask its owner for access, give them this code:\n\n"
        f"{request.code}\n\n"
        "It is valid for one hour. The owner approves it in famulus under "
        "Settings → Telegram."
    )
