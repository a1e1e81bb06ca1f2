"""chat/follow.py: a channel follows the run that answers its message, also when
that message was queued and a new run answers it."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from tests.support.chat_models import install_model, scripted
from tests.support.sessions import new_session

from famulus.chat import follow as follow_module
from famulus.chat.follow import Answer, Followed, _events_of, follow
from famulus.chat.manager import ChatInput, Submitted


async def _answer_of(followed: Any) -> tuple[Answer, list[str]]:
    answer, types = Answer(), []
    async for event in followed.events:
        answer.take(event)
        types.append(event.type)
    return answer, types


async def test_a_message_left_over_is_followed_into_the_run_that_answers_it(
    app: Any, client: httpx.AsyncClient
) -> None:
    """The run ended before taking the queued message in; the manager answers it
    with a new run whose ``run_started`` names the message's client_id. The
    hub is real; the runs' events are published as the manager would."""
    sid = await new_session(client)
    hub = app.state.container.events
    sub = hub.subscribe(sid)
    followed = Followed(Submitted("r_old", sid, True), "c-left")
    followed.events = _events_of(hub, sid, sub, followed)
    seen: list[tuple[str, str]] = []

    async def read() -> None:
        async for event in followed.events:
            seen.append((event.type, followed.run_id))

    reader = asyncio.create_task(read())
    await hub.publish(sid, "text", run_id="r_old", content="old", depth=0)
    await hub.publish(sid, "run_finished", run_id="r_old", usage={})
    await hub.publish(sid, "run_started", run_id="r_other", session_id=sid, client_id="c-x")
    await hub.publish(sid, "run_started", run_id="r_new", session_id=sid, client_id="c-left")
    await hub.publish(sid, "text", run_id="r_new", content="new", depth=0)
    await hub.publish(sid, "run_finished", run_id="r_new", usage={})
    await asyncio.wait_for(reader, 5)
    assert seen == [
        ("text", "r_old"),
        ("run_finished", "r_old"),
        ("run_started", "r_new"),
        ("text", "r_new"),
        ("run_finished", "r_new"),
    ]
    assert hub.subscriber_count(sid) == 0


async def test_a_left_over_message_nobody_answers_ends_the_follow(
    app: Any, client: httpx.AsyncClient, monkeypatch: Any
) -> None:
    monkeypatch.setattr(follow_module, "LEFTOVER_WAIT_S", 0.2)
    sid = await new_session(client)
    hub = app.state.container.events
    followed = Followed(Submitted("r_old", sid, True), "c-left")
    followed.events = _events_of(hub, sid, hub.subscribe(sid), followed)
    reader = asyncio.create_task(_answer_of(followed))
    await asyncio.sleep(0.05)
    await hub.publish(sid, "run_cancelled", run_id="r_old")
    answer, types = await asyncio.wait_for(reader, 5)
    assert types == ["run_cancelled"] and answer.status == "cancelled"


async def test_a_message_taken_in_ends_with_the_run_that_took_it(
    app: Any, client: httpx.AsyncClient
) -> None:
    install_model(app, scripted(("tool", "current_time", "{}"), "both answered", delay=0.05))
    sid = await new_session(client)
    c = app.state.container
    one = await follow(c.events, c.chat, ChatInput("one", sid))
    two = await follow(c.events, c.chat, ChatInput("two", sid))
    assert two.submitted.queued
    answer, types = await asyncio.wait_for(_answer_of(two), 20)
    await asyncio.wait_for(_answer_of(one), 5)
    assert "message_ingested" in types and two.run_id == one.run_id
    assert answer.status == "ok" and "both answered" in answer.text
