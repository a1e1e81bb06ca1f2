"""A streamed Telegram answer: throttled edits, and no second message when the
final text arrives while a streamed send is still on its way; an approval
question that always fits in one message."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.support.fake_telegram import LIMIT, visible_text

from famulus.channels.telegram.botapi import BotApiError
from famulus.channels.telegram.conversation import Conversations
from famulus.channels.telegram.reply import Reply
from famulus.events import Event


class SlowApi:
    """Records sends and edits; each call takes ``delay`` seconds."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.sent: list[str] = []
        self.edits: list[tuple[int, str]] = []

    async def send_message(self, chat_id: int, text: str, html: bool = False) -> int:
        await asyncio.sleep(self.delay)
        self.sent.append(text)
        return len(self.sent)

    async def edit_message(
        self, chat_id: int, message_id: int, text: str, html: bool = False
    ) -> None:
        await asyncio.sleep(self.delay)
        self.edits.append((message_id, text))


def reply(api: Any, interval_s: float) -> Reply:
    return Reply(api, 1, interval_s)


async def test_the_final_text_waits_for_a_send_in_flight() -> None:
    api = SlowApi(0.05)
    r = reply(api, 1.0)
    r.update("Hel")
    await asyncio.sleep(0.01)  # the streamed send is under way
    await r.finish("Hello **there**")
    assert api.sent == ["Hel"] and api.edits == [(1, "Hello <b>there</b>")]


async def test_updates_within_the_interval_become_one_edit() -> None:
    api = SlowApi(0.0)
    r = reply(api, 0.2)
    r.update("a")
    await asyncio.sleep(0.02)
    for text in ("a b", "a b c", "a b c d"):
        r.update(text)
        await asyncio.sleep(0.01)
    assert api.sent == ["a"] and api.edits == []
    await asyncio.sleep(0.3)
    assert api.edits == [(1, "a b c d")]  # the newest text, once
    await r.finish("a b c d")
    assert api.edits == [(1, "a b c d")]  # unchanged: no edit


async def test_a_long_answer_continues_in_a_second_message() -> None:
    api = SlowApi(0.0)
    r = reply(api, 0.0)
    text = " ".join(["word"] * 1000)  # 4,999 characters
    await r.finish(text)
    assert len(api.sent) == 2 and " ".join(api.sent) == text


class StrictApi:
    """Refuses a message longer than Telegram allows, as Telegram does."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    async def send_message(
        self, chat_id: int, text: str, html: bool = False, buttons: Any = None
    ) -> int:
        shown, error = visible_text(text, "HTML" if html else None)
        if error or len(shown) > LIMIT:
            raise BotApiError("sendMessage", 400, error or "Bad Request: message is too long")
        self.sent.append(shown)
        return len(self.sent)


async def test_an_approval_with_a_huge_tool_description_is_still_asked() -> None:
    api = StrictApi()
    conversations = Conversations(api, "bot", None, None, None, None, 1.0)  # type: ignore[arg-type]
    description = "Does many things. " * 400  # an MCP tool's one-line manual
    args = {"text": '<b>&"</b>' * 400}
    event = Event(
        "approval_needed",
        {"tool_id": "t1", "name": "srv_tool", "args": args, "description": description},
        None,
    )
    await conversations._ask(7, "r_1", event)
    assert len(api.sent) == 1 and api.sent[0].startswith("May I use srv_tool?")
    assert list(conversations.waiting.values())[0].message_id == 1  # the buttons are live
