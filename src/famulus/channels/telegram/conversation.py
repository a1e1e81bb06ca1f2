"""What one Telegram update does: pairing, bot commands, messages, buttons.

An approved chat talks to its current famulus session. The bot's own commands
(``/start``, ``/help``, ``/new``, ``/sessions``, ``/cancel``) are handled here;
any other ``/name args`` goes to the agent like a typed message, where it runs
the skill ``name``. Each submitted message's run is followed in its own task
(``chat.follow``), so the update loop is never held up by a run and can take a
button press for an approval the run is waiting on.
"""

from __future__ import annotations

import asyncio
import base64
import html
import json
import logging
import secrets
from dataclasses import dataclass
from typing import Any

from famulus.channels.telegram.botapi import BotApi, BotApiError
from famulus.channels.telegram.pairing import Pairing, stranger_text
from famulus.channels.telegram.reply import Reply
from famulus.chat.follow import Answer, Followed, follow
from famulus.chat.manager import ChatInput, RunManager
from famulus.errors import FamulusError
from famulus.events import Event, EventHub
from famulus.sessions.service import SessionService
from famulus.store.sessions import SessionRow
from famulus.store.telegram import ChatRow, TelegramStore

log = logging.getLogger(__name__)

SESSIONS_SHOWN = 10
ARGS_SHOWN = 1500
# A tool's description is someone else's text (an MCP server's tool may put a
# whole manual on its first line); uncut, the question would pass Telegram's
# 4096 characters, never be shown, and leave the run waiting for an answer.
DESCRIPTION_SHOWN = 500
HELP = (
    "Write to me as you would in famulus; your messages go to your current session.\n\n"
    "/new — start a new session\n"
    "/sessions — list your sessions and switch (/sessions 2 switches to the second)\n"
    "/cancel — stop the answer in progress\n"
    "/help — this text\n\n"
    "Any other /name runs the famulus skill of that name, e.g. /weather Berlin. "
    "Photos are shown to the agent, with their caption as the message."
)


@dataclass
class Waiting:
    """An approval asked for with buttons; the button names it by a short key."""

    run_id: str
    tool_id: str
    chat_id: int
    name: str
    message_id: int | None = None  # None until the question is sent


@dataclass(frozen=True)
class Incoming:
    chat_id: int
    title: str
    text: str
    photo_id: str | None


def incoming(message: dict[str, Any]) -> Incoming | None:
    chat = message.get("chat") or {}
    if not isinstance(chat.get("id"), int):
        return None
    sender = message.get("from") or {}
    names = [chat.get("title"), chat.get("first_name"), chat.get("last_name")]
    title = " ".join(str(n) for n in names if n) or str(
        chat.get("username") or sender.get("first_name") or chat["id"]
    )
    photos = [p for p in message.get("photo") or [] if isinstance(p, dict) and p.get("file_id")]
    largest = max(
        photos, key=lambda p: int(p.get("width", 0)) * int(p.get("height", 0)), default=None
    )
    text = str(message.get("text") or message.get("caption") or "")
    return Incoming(chat["id"], title, text, str(largest["file_id"]) if largest else None)


def command(text: str, bot_username: str) -> tuple[str, str] | None:
    """``("new", "args")`` for ``/new args`` or ``/new@thisbot args``; None for
    a plain message or a command meant for another bot in a group."""
    if not text.startswith("/"):
        return None
    word, _, args = text[1:].partition(" ")
    name, _, target = word.partition("@")
    if target and bot_username and target.lower() != bot_username.lower():
        return None
    return name.lower(), args.strip()


def compose(texts: list[str], live: str) -> str:
    return "\n\n".join(t for t in [*texts, live] if t.strip()).strip()


def final_text(answer: Answer, said: str, shown_before: bool) -> str:
    """The last message's final text (empty: nothing more to show)."""
    if answer.status == "ok":
        if said or shown_before:
            return said
        return "_(The run finished without a text answer.)_"
    if answer.status == "cancelled":
        return (said + "\n\n" if said else "") + "_Cancelled._"
    reason = answer.error or "The run ended before it finished."
    return (said + "\n\n" if said else "") + f"⚠️ {reason}"


class Conversations:
    """Handles the updates of one bot connection (one token)."""

    def __init__(
        self,
        api: BotApi,
        bot_username: str,
        store: TelegramStore,
        sessions: SessionService,
        chat: RunManager,
        events: EventHub,
        edit_interval_s: float,
    ) -> None:
        self.api = api
        self.bot_username = bot_username
        self.store = store
        self.sessions = sessions
        self.chat = chat
        self.events = events
        self.edit_interval_s = edit_interval_s
        self.pairing = Pairing(store)
        self.waiting: dict[str, Waiting] = {}
        self.tasks: set[asyncio.Task[None]] = set()

    async def close(self) -> None:
        """Stop following runs (the runs themselves go on)."""
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)

    async def handle(self, update: dict[str, Any]) -> None:
        if isinstance(update.get("callback_query"), dict):
            await self._button(update["callback_query"])
        elif isinstance(update.get("message"), dict):
            msg = incoming(update["message"])
            if msg is not None:
                await self._message(msg)

    # -- messages --------------------------------------------------------------

    async def _message(self, msg: Incoming) -> None:
        row = await self.store.chat(msg.chat_id)
        if row is None:
            await self._stranger(msg)
            return
        cmd = command(msg.text, self.bot_username)
        if cmd is not None and cmd[0] in ("start", "help"):
            await self.say(msg.chat_id, HELP)
        elif cmd is not None and cmd[0] == "new":
            session = await self._new_session(row)
            await self.say(msg.chat_id, f"Started a new session: {session.name}.")
        elif cmd is not None and cmd[0] == "sessions":
            await self._sessions(row, cmd[1])
        elif cmd is not None and cmd[0] == "cancel":
            await self._cancel(row)
        else:
            await self._submit(row, msg)

    async def _stranger(self, msg: Incoming) -> None:
        """Nothing a stranger writes goes further than this."""
        if not self.pairing.may_reply(msg.chat_id):
            return
        request = await self.pairing.request(msg.chat_id, msg.title)
        if request.code is not None:
            log.info("telegram: chat %s asks for access (pairing code issued)", msg.chat_id)
        await self.say(msg.chat_id, stranger_text(request))

    async def say(self, chat_id: int, text: str, buttons: Any = None) -> int | None:
        try:
            return await self.api.send_message(chat_id, text, buttons=buttons)
        except BotApiError as exc:
            log.warning("telegram: could not answer chat %s: %s", chat_id, exc)
            return None

    async def _submit(self, row: ChatRow, msg: Incoming) -> None:
        images = None
        if msg.photo_id is not None:
            try:
                data = await self.api.download_file(msg.photo_id)
            except BotApiError as exc:
                await self.say(msg.chat_id, f"I could not fetch the photo: {exc.description}.")
                return
            images = [{"media_type": "image/jpeg", "data": base64.b64encode(data).decode()}]
        if not msg.text.strip() and images is None:
            await self.say(msg.chat_id, "I can read text and photos; this message has neither.")
            return
        session = await self._current_session(row)
        try:
            followed = await follow(
                self.events, self.chat, ChatInput(msg.text, session.session_id, images)
            )
        except FamulusError as exc:
            await self.say(msg.chat_id, exc.detail)
            return
        if followed.submitted.queued:
            self.spawn(self._follow_left_over(msg.chat_id, followed))
            await self.say(msg.chat_id, "Noted — I'll take this in at my next step.")
        else:
            self.spawn(self._follow(msg.chat_id, followed))

    def spawn(self, coro: Any) -> None:
        """Run ``coro`` as a task this connection cancels when it closes."""
        task: asyncio.Task[None] = asyncio.create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _follow_left_over(self, chat_id: int, followed: Followed) -> None:
        """A queued message: the run it was queued into is drawn by that run's own
        follower, which also shows the answer when the run takes the message in.
        If the run ends first, a new run answers it; draw that one."""
        first = followed.run_id
        async for _event in followed.events:
            if followed.run_id not in (first, ""):
                await self._follow(chat_id, followed)
                return

    async def _follow(self, chat_id: int, followed: Followed) -> None:
        """Render one run: streamed text, approval buttons, the final answer.
        When a message queued into the run is taken in, the answer so far is
        left as it is and what follows goes into a new message, below the one
        it answers."""
        reply = Reply(self.api, chat_id, self.edit_interval_s)
        answer, live, shown = Answer(), "", False
        texts: list[str] = []
        try:
            await self.api.send_typing(chat_id)
        except BotApiError:
            pass
        try:
            async for event in followed.events:
                answer.take(event)
                top = event.data.get("depth", 0) == 0
                if event.type == "text_delta" and top:
                    live += str(event.data.get("content", ""))
                    reply.update(compose(texts, live))
                elif event.type == "text" and top:
                    texts.append(str(event.data.get("content", "")))
                    live = ""
                    reply.update(compose(texts, live))
                elif event.type == "message_ingested" and compose(texts, live):
                    await reply.finish(compose(texts, live))
                    reply, texts, live, shown = (
                        Reply(self.api, chat_id, self.edit_interval_s),
                        [],
                        "",
                        True,
                    )
                elif event.type == "approval_needed":
                    await self._ask(chat_id, followed.run_id, event)
                elif event.type == "tool_result":
                    await self._settled(followed.run_id, str(event.data.get("tool_id")))
            final = final_text(answer, compose(texts, live), shown)
            if final:
                await reply.finish(final)
        except Exception:
            log.exception("telegram: following run %s failed", followed.run_id)
        finally:
            await reply.close()
            await self._settled(followed.run_id, None)

    # -- approvals -------------------------------------------------------------

    async def _ask(self, chat_id: int, run_id: str, event: Event) -> None:
        key = secrets.token_hex(4)
        name = str(event.data.get("name", "a tool"))
        description = str(event.data.get("description") or "")
        if len(description) > DESCRIPTION_SHOWN:
            description = description[:DESCRIPTION_SHOWN] + "…"
        args = json.dumps(event.data.get("args") or {}, ensure_ascii=False, indent=1)
        if len(args) > ARGS_SHOWN:
            args = args[:ARGS_SHOWN] + "…"
        text = (
            f"<b>May I use {html.escape(name)}?</b>\n"
            f"{html.escape(description)}\n"
            f"<pre>{html.escape(args)}</pre>"
        )
        buttons = [
            [
                {"text": "Approve", "callback_data": f"ap:{key}:y"},
                {"text": "Deny", "callback_data": f"ap:{key}:n"},
            ]
        ]
        # Known before it is sent: the press may be read before the send returns.
        waiting = Waiting(run_id, str(event.data.get("tool_id")), chat_id, name)
        self.waiting[key] = waiting
        try:
            waiting.message_id = await self.api.send_message(
                chat_id, text, html=True, buttons=buttons
            )
        except BotApiError as exc:
            log.warning("telegram: could not ask chat %s for an approval: %s", chat_id, exc)
            self.waiting.pop(key, None)

    async def _settled(self, run_id: str, tool_id: str | None) -> None:
        """Approvals of the run (of ``tool_id``, or all) that were answered
        elsewhere (the web client) or that the run's end made moot: their
        buttons are taken away."""
        for key, w in list(self.waiting.items()):
            if w.run_id != run_id or tool_id not in (None, w.tool_id):
                continue
            del self.waiting[key]
            if w.message_id is None:
                continue
            how = "Answered elsewhere" if tool_id is not None else "No longer needed"
            try:
                await self.api.edit_message(w.chat_id, w.message_id, f"{how}: {w.name}")
            except BotApiError as exc:
                log.warning("telegram: could not update an approval request: %s", exc)

    async def _button(self, query: dict[str, Any]) -> None:
        message = query.get("message") or {}
        chat_id = (message.get("chat") or {}).get("id")
        data = str(query.get("data") or "")
        query_id = str(query.get("id") or "")
        if not isinstance(chat_id, int) or await self.store.chat(chat_id) is None:
            await self._answer_button(query_id, "Not allowed.")
            return
        message_id = int(message.get("message_id") or 0)
        if data.startswith("ap:"):
            await self._decide(chat_id, message_id, query_id, data)
        elif data.startswith("ss:"):
            row = await self.store.chat(chat_id)
            assert row is not None
            await self._switch(row, data[3:], query_id)
        else:
            await self._answer_button(query_id, "This button is no longer in use.")

    async def _decide(self, chat_id: int, message_id: int, query_id: str, data: str) -> None:
        _, key, choice = (data.split(":") + ["", ""])[:3]
        waiting = self.waiting.get(key)
        if waiting is None or waiting.chat_id != chat_id:
            await self._answer_button(query_id, "This request is no longer open.")
            return
        approved = choice == "y"
        try:
            await self.chat.answer(waiting.run_id, waiting.tool_id, approved, None)
        except FamulusError:
            await self._answer_button(query_id, "This request is no longer open.")
            return
        finally:
            self.waiting.pop(key, None)
        decided = "Approved" if approved else "Denied"
        await self._answer_button(query_id, decided)
        mark = "✅" if approved else "❌"
        try:
            await self.api.edit_message(chat_id, message_id, f"{mark} {decided}: {waiting.name}")
        except BotApiError as exc:
            log.warning("telegram: could not mark an approval as decided: %s", exc)

    async def _answer_button(self, query_id: str, text: str) -> None:
        try:
            await self.api.answer_callback(query_id, text)
        except BotApiError as exc:
            log.warning("telegram: could not answer a button press: %s", exc)

    # -- sessions and cancel ---------------------------------------------------

    async def _current_session(self, row: ChatRow) -> SessionRow:
        if row.session_id is not None:
            found = await self.sessions.find(row.session_id)
            if found is not None and found.archived_at is None:
                return found
        return await self._new_session(row)

    async def _new_session(self, row: ChatRow) -> SessionRow:
        session = await self.sessions.create(f"Telegram: {row.title}"[:200])
        await self.store.set_session(row.chat_id, session.session_id, new=True)
        return session

    async def _chat_sessions(self, row: ChatRow) -> list[SessionRow]:
        found: list[SessionRow] = []
        for session_id in await self.store.session_ids(row.chat_id):
            session = await self.sessions.find(session_id)
            if session is not None and session.archived_at is None:
                found.append(session)
        found.sort(key=lambda s: s.last_activity, reverse=True)
        return found[:SESSIONS_SHOWN]

    async def _sessions(self, row: ChatRow, args: str) -> None:
        listed = await self._chat_sessions(row)
        if not listed:
            await self.say(row.chat_id, "No sessions yet; just write, or start one with /new.")
            return
        if args:
            # isdecimal, not isdigit: "²" is a digit that int() refuses.
            if not args.isdecimal() or not 1 <= int(args) <= len(listed):
                await self.say(row.chat_id, f"Choose a number from 1 to {len(listed)}.")
                return
            await self._switch(row, listed[int(args) - 1].session_id, None)
            return
        lines = [
            f"{n}. {s.name} ({s.message_count} messages)"
            + (" — current" if s.session_id == row.session_id else "")
            for n, s in enumerate(listed, 1)
        ]
        buttons = [
            [{"text": f"{n}. {s.name}"[:60], "callback_data": f"ss:{s.session_id}"}]
            for n, s in enumerate(listed, 1)
        ]
        await self.say(row.chat_id, "Your sessions:\n" + "\n".join(lines), buttons=buttons)

    async def _switch(self, row: ChatRow, session_id: str, query_id: str | None) -> None:
        mine = set(await self.store.session_ids(row.chat_id))
        session = await self.sessions.find(session_id) if session_id in mine else None
        if session is None or session.archived_at is not None:
            text = "That session is gone."
        else:
            await self.store.set_session(row.chat_id, session_id, new=False)
            text = f"Switched to {session.name}."
        if query_id is not None:
            await self._answer_button(query_id, text)
        await self.say(row.chat_id, text)

    async def _cancel(self, row: ChatRow) -> None:
        stopped = None
        if row.session_id is not None:
            try:
                stopped = await self.chat.cancel(None, row.session_id)
            except FamulusError:
                stopped = None
        await self.say(row.chat_id, "Cancelled." if stopped else "Nothing is running.")
