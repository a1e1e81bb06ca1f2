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
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from famulus.chat.manager import ChatInput, RunManager, Submitted
from famulus.events import CLOSED, Event, EventHub

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


class Followed:
    """A submitted message and the stream of its run's events."""

    def __init__(self, submitted: Submitted, events: AsyncIterator[Event]) -> None:
        self.submitted = submitted
        self.events = events

    @property
    def run_id(self) -> str:
        return self.submitted.run_id


async def follow(events: EventHub, chat: RunManager, inp: ChatInput) -> Followed:
    """Submit ``inp`` and return its run's events; iterate them to the end (the
    iterator unsubscribes when the run ends or the iteration stops).

    Raises what ``RunManager.submit`` raises (unknown session, no model, …)
    before anything is followed.
    """
    sub = events.subscribe(inp.session_id)
    try:
        submitted = await chat.submit(inp)
    except BaseException:
        events.unsubscribe(inp.session_id, sub)
        raise
    return Followed(submitted, _events_of(events, inp.session_id, sub, submitted.run_id))


async def _events_of(hub: EventHub, session_id: str, sub: Any, run_id: str) -> AsyncIterator[Event]:
    try:
        while True:
            event: Event = await sub.queue.get()
            if event.type == CLOSED:
                return
            if event.data.get("run_id") not in (None, run_id):
                continue
            yield event
            if event.type in TERMINAL and event.data.get("run_id") == run_id:
                return
    finally:
        hub.unsubscribe(session_id, sub)


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
