"""Run the famulus agent for one OpenAI chat request and hand out its answer.

The request's new message goes to the session the ``SessionMap`` picks, as
any chat message does (memory, skills, tools and directives all apply); the
run is followed through ``chat/follow.py``. Its depth-0 text becomes pieces:
``text_delta`` events as they come, and each final ``text`` event for what
the deltas did not carry (a run that was not streamed, or text kept on
cancel). Text blocks are joined by a blank line, so the pieces of a stream
add up to exactly the content a non-streamed answer has.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from famulus.channels.openai_compat.messages import last_user_message, user_texts
from famulus.channels.openai_compat.sessions import CLIENT_ID_PREFIX, SessionMap
from famulus.chat.follow import Answer, Followed, follow
from famulus.chat.manager import ChatInput, RunManager, check_images
from famulus.core import Core
from famulus.errors import Conflict, NotFound
from famulus.events import Event
from famulus.sessions.service import quote_id
from famulus.store.openai_sessions import OpenAISessionStore

log = logging.getLogger(__name__)

MODEL_ID = "famulus"
BLOCK_SEPARATOR = "\n\n"
APPROVAL_REFUSAL = (
    "Not run: this conversation comes through famulus's OpenAI-compatible API, where "
    "nobody can approve actions. Do not retry it. Tell the person that this action needs "
    "their approval, and that they can ask for it again from a famulus client that can "
    "approve (the web client, Telegram or `famulus chat`), or resend the request with the "
    "header 'X-Famulus-Approve: all'."
)


class ModelNotFound(NotFound):
    code = "model_not_found"


@dataclass(frozen=True)
class CompletionRequest:
    model: str
    messages: list[dict[str, Any]]
    session_header: str | None = None
    chat_header: str | None = None  # X-OpenWebUI-Chat-Id
    user: str | None = None
    user_agent: str | None = None
    approve_all: bool = False


@dataclass(frozen=True)
class Ended:
    """How the run ended: ``ok``, ``cancelled`` or ``error`` (with ``error`` set)."""

    status: str
    usage: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


class Transcript:
    """Turns a run's depth-0 text events into the pieces a client is sent."""

    def __init__(self) -> None:
        self.said = False  # anything sent yet
        self.block: str | None = None  # the streamed text of the open block

    def take(self, event: Event) -> list[str]:
        if event.data.get("depth", 0) != 0:
            return []
        content = str(event.data.get("content") or "")
        if event.type == "text_delta" and content:
            return self._delta(content)
        if event.type == "text":
            return self._final(content)
        return []

    def _delta(self, content: str) -> list[str]:
        pieces = []
        if self.block is None:
            self.block = ""
            if self.said:
                pieces.append(BLOCK_SEPARATOR)
        self.block += content
        self.said = True
        return [*pieces, content]

    def _final(self, content: str) -> list[str]:
        streamed, self.block = self.block, None
        if streamed is not None:  # the deltas carried it; send what they missed
            return [content[len(streamed) :]] if content.startswith(streamed) else []
        if not content:
            return []
        pieces = [BLOCK_SEPARATOR, content] if self.said else [content]
        self.said = True
        return pieces


class Completion:
    """One request's run: its pieces of text, then how it ended."""

    def __init__(self, followed: Followed, session_id: str, owner: OpenAICompat) -> None:
        self.run_id = followed.run_id
        self.session_id = session_id
        self.ended: Ended | None = None
        self._owner = owner
        self._items: asyncio.Queue[str | Ended] = asyncio.Queue()
        self._pump = asyncio.create_task(self._read(followed), name=f"openai-{self.run_id}")

    async def _read(self, followed: Followed) -> None:
        transcript, answer = Transcript(), Answer()
        try:
            async for event in followed.events:
                for piece in transcript.take(event):
                    if piece:
                        self._items.put_nowait(piece)
                answer.take(event)
        except Exception:  # never leave the client waiting for an end that cannot come
            log.exception("following run %s failed", self.run_id)
            answer.status, answer.error = "error", "Internal server error; see the server log."
        if answer.status == "running":  # the stream closed under us (shutdown)
            answer.status, answer.error = "error", "The server is shutting down."
        self._items.put_nowait(Ended(answer.status, answer.usage, answer.error))

    async def next(self, timeout: float) -> str | Ended | None:
        """The next piece of text, the end, or None when nothing came in ``timeout`` s."""
        try:
            item = await asyncio.wait_for(self._items.get(), timeout)
        except TimeoutError:
            return None
        if isinstance(item, Ended):
            self.ended = item
        return item

    def abandon(self) -> None:
        """The client went away before the end: stop following and cancel the run
        (an OpenAI client's "stop" is closing the connection)."""
        self._pump.cancel()
        if self.ended is None:
            self._owner.cancel_later(self.run_id)


class OpenAICompat:
    def __init__(self, core: Core, chat: RunManager, store: OpenAISessionStore) -> None:
        self.core = core
        self.chat = chat
        self.sessions = SessionMap(core.sessions, store)
        self._cancels: set[asyncio.Task[None]] = set()
        self.created = int(time.time())  # the models' "created": when this server started

    def model_ids(self) -> list[str]:
        """Only famulus itself: a run cannot be given another model (yet)."""
        return [MODEL_ID]

    def check_model(self, model: str) -> None:
        if model not in self.model_ids():
            raise ModelNotFound(
                f"The model '{quote_id(model)}' does not exist; use 'famulus' "
                "(GET /v1/models). famulus answers with its configured chat model."
            )

    async def start(self, req: CompletionRequest) -> Completion:
        """Check the request, pick the session, submit the message and follow its run.

        Order: model → message → chat model configured (503) → session (404/409
        for an unknown or archived ``X-Famulus-Session``) → the session is not
        busy with another run (409). Nothing is stored on any error.
        """
        self.check_model(req.model)
        new = last_user_message(req.messages)
        resolved = await self.chat.turns.resolve("chat")
        picked = await self.sessions.resolve(
            req.session_header,
            req.user,
            req.user_agent,
            chat_id=req.chat_header,
            first_text=new.text,
        )
        session_id = picked.session_id
        if self.chat.busy(session_id):
            raise Conflict(
                f"Session '{quote_id(session_id)}' is busy with another run; wait for it "
                "to finish, or talk to another session."
            )
        if picked.conversation:
            check_images(new.images, resolved)  # refuse before anything is reverted
            await self.sessions.follow_conversation(session_id, user_texts(req.messages))
        inp = ChatInput(
            new.text,
            session_id,
            new.images,
            skip_approvals=req.approve_all,
            client_id=CLIENT_ID_PREFIX + secrets.token_hex(8),
            approval_refusal=None if req.approve_all else APPROVAL_REFUSAL,
        )
        followed = await follow(self.core.events, self.chat, inp)
        return Completion(followed, session_id, self)

    def cancel_later(self, run_id: str) -> None:
        task = asyncio.create_task(self._cancel(run_id), name=f"openai-cancel-{run_id}")
        self._cancels.add(task)
        task.add_done_callback(self._cancels.discard)

    async def _cancel(self, run_id: str) -> None:
        with contextlib.suppress(NotFound, Conflict):
            await self.chat.cancel(run_id, None)
