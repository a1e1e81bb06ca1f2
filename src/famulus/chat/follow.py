"""Follow one run from the inside: what every non-HTTP client of chat shares.

A channel (Telegram, the OpenAI-compatible endpoint, MCP, automations) is just
another client of sessions and runs: it submits a message and then reads the
session's events for that run until the run ends. The subscription is opened
*before* the submit, so not even the first event can be missed, and events of
other runs in the same session are skipped.

What a channel does with an ``approval_needed`` event is its own business (a
Telegram button, a refusal, a read-only denial): ``follow`` only hands the
events over; ``answer`` texts are collected by ``Answer``.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from typing import Any

from famulus.chat.manager import ChatInput, RunManager, Submitted
from famulus.events import CLOSED, Event, EventHub, Subscription

TERMINAL = ("run_finished", "run_error", "run_cancelled")


@dataclass
class Answer:
    """What a run said, gathered from its events (depth 0 only)."""

    status: str = "running"  # running | ok | error | cancelled | timeout
    texts: list[str] = field(default_factory=list)
    error: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return "\n\n".join(t for t in self.texts if t).strip()

    def take(self, event: Event) -> None:
        """Fold one event of the run into the answer."""
        data = event.data
        if event.type == "text" and data.get("depth", 0) == 0:
            self.texts.append(str(data.get("content", "")))
        elif event.type == "run_finished":
            self.status = "ok"
            self.usage = dict(data.get("usage") or {})
        elif event.type == "run_error":
            self.status = "error"
            self.error = str(data.get("message") or "The run failed.")
        elif event.type == "run_cancelled":
            self.status = "cancelled"


LEFTOVER_WAIT_S = 30.0
"""How long a queued message's follower waits, after the run it was queued
into ends without taking it in, for the new run that answers it (the manager
starts that run right after the old one's end; this only bounds a message that
never gets one, e.g. after a cancel)."""


class Followed:
    """A submitted message and the stream of the events of the run that answers it.

    A message queued into a running run is usually taken in at its next turn
    boundary (``message_ingested``); one that arrives after the last boundary is
    answered by a new run the manager starts when the old one ends. The events
    then go on with that run's (its ``run_started`` carries the message's
    ``client_id``), and ``run_id`` names it from there on.
    """

    def __init__(self, submitted: Submitted, client_id: str) -> None:
        self.submitted = submitted
        self.client_id = client_id
        self.run_id = submitted.run_id
        self.events: AsyncIterator[Event] = _nothing()


async def follow(events: EventHub, chat: RunManager, inp: ChatInput) -> Followed:
    """Submit ``inp`` and return its run's events; iterate them to the end (the
    iterator unsubscribes when the run ends or the iteration stops).

    Raises what ``RunManager.submit`` raises (unknown session, no model, …)
    before anything is followed.
    """
    if inp.client_id is None:  # how a queued message is recognised when taken in
        inp = replace(inp, client_id="f-" + secrets.token_hex(8))
    sub = events.subscribe(inp.session_id)
    try:
        submitted = await chat.submit(inp)
    except BaseException:
        events.unsubscribe(inp.session_id, sub)
        raise
    followed = Followed(submitted, inp.client_id or "")
    followed.events = _events_of(events, inp.session_id, sub, followed)
    return followed


async def _nothing() -> AsyncIterator[Event]:
    return
    yield  # pragma: no cover - makes this an async generator


async def _events_of(
    hub: EventHub, session_id: str, sub: Subscription, followed: Followed
) -> AsyncIterator[Event]:
    taken_in = not followed.submitted.queued
    try:
        while True:
            event = await _next(sub, None if taken_in or followed.run_id else LEFTOVER_WAIT_S)
            if event is None or event.type == CLOSED:
                return
            mine = event.data.get("client_id") == followed.client_id
            if event.type == "run_started" and mine and not taken_in:
                followed.run_id, taken_in = str(event.data["run_id"]), True
            if event.data.get("run_id") not in (None, followed.run_id):
                continue
            if event.type == "message_ingested" and mine:
                taken_in = True
            yield event
            if event.type == "message_withdrawn" and mine:
                return
            if event.type in TERMINAL and event.data.get("run_id") == followed.run_id:
                if taken_in:
                    return
                followed.run_id = ""  # wait for the run that answers the message
    finally:
        hub.unsubscribe(session_id, sub)


async def _next(sub: Subscription, timeout_s: float | None) -> Event | None:
    if timeout_s is None:
        return await sub.queue.get()
    try:
        return await asyncio.wait_for(sub.queue.get(), timeout_s)
    except TimeoutError:
        return None


async def ask(
    events: EventHub,
    chat: RunManager,
    inp: ChatInput,
    timeout_s: float,
    on_approval: Any = None,
) -> tuple[str, Answer]:
    """Submit and wait for the whole answer; returns ``(run_id, answer)``.

    ``on_approval(run_id, event)`` is awaited for each ``approval_needed``; it
    must answer it (``chat.answer``), or the run waits. Past ``timeout_s`` the
    run is cancelled and the answer says so.
    """
    followed = await follow(events, chat, inp)
    answer = Answer()

    async def drain() -> None:
        async for event in followed.events:
            if event.type == "approval_needed" and on_approval is not None:
                await on_approval(followed.run_id, event)
            answer.take(event)

    try:
        await asyncio.wait_for(drain(), timeout_s)
    except TimeoutError:
        await chat.cancel(followed.run_id, None)
        answer.status = "timeout"
        answer.error = f"The run took longer than {timeout_s:.0f} s and was cancelled."
    return followed.run_id, answer
