"""Time in memory (issue 12): when facts were said, when their events happened,
questions about a period, and dates in what the agent is given."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from datetime import date, timedelta
from typing import Any

import httpx
import pytest
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import AgentInfo, FunctionModel
from tests.support.chat_models import events_until, install_model
from tests.support.memory_models import install_memory_model
from tests.support.sessions import new_session

from famulus.memory import when
from famulus.memory.service import EVENT_DATES_READ
from famulus.timeutil import parse_iso, utcnow


def _capturing(seen: list[str]) -> FunctionModel:
    """A chat model that keeps the instructions (the system prompt) it was given."""

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
        seen.append(info.instructions or "")
        yield "Noted."

    return FunctionModel(stream_function=stream)


async def _add(client: httpx.AsyncClient, text: str, said_at: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"text": text}
    if said_at is not None:
        body["said_at"] = said_at
    r = await client.post("/facts", json=body)
    assert r.status_code == 201, r.text
    return dict(r.json()["fact"])


async def test_a_fact_keeps_when_it_was_said_and_when_it_happened(
    client: httpx.AsyncClient,
) -> None:
    hiking = await _add(client, "We went hiking with Sam last Tuesday", "2023-05-08T10:00:00Z")
    assert hiking["said_at"] == "2023-05-08T10:00:00.000Z"
    assert (hiking["event_start"], hiking["event_end"]) == ("2023-05-02", "2023-05-02")
    june = await _add(client, "Im Juni war ich in Rom", "2023-05-08")
    assert (june["event_start"], june["event_end"]) == ("2022-06-01", "2022-06-30")
    plain = await _add(client, "I have 3 kids")
    assert plain["said_at"] == plain["created_at"]
    assert plain["event_start"] is None and plain["event_end"] is None
    r = await client.patch(f"/facts/{plain['id']}", json={"text": "I had 3 kids over yesterday"})
    assert r.json()["fact"]["event_start"] is not None
    r = await client.post("/facts", json={"text": "x", "said_at": "last week"})
    assert r.status_code == 422


async def test_an_import_carries_when_each_fact_was_said(client: httpx.AsyncClient) -> None:
    r = await client.post(
        "/facts/import",
        json={
            "facts": [
                {"text": "Dinner at Luigi's yesterday", "said_at": "2024-03-10T19:00:00+00:00"},
                {"text": "Likes jazz"},
            ]
        },
    )
    assert r.status_code == 201, r.text
    ids = r.json()["fact_ids"]
    dinner = (await client.get(f"/facts/{ids[0]}")).json()["fact"]
    assert dinner["said_at"] == "2024-03-10T19:00:00.000Z"
    assert (dinner["event_start"], dinner["event_end"]) == ("2024-03-09", "2024-03-09")
    jazz = (await client.get(f"/facts/{ids[1]}")).json()["fact"]
    assert jazz["said_at"] == jazz["created_at"] and jazz["event_start"] is None


async def test_extracted_facts_are_dated_by_their_conversation(
    app: Any, client: httpx.AsyncClient
) -> None:
    sid = str((await client.post("/sessions", json={"name": "m"})).json()["session_id"])
    sessions = app.state.container.sessions.store
    await sessions.add_message(sid, "user", "We married on 2 May 2023. I bought a bike yesterday.")
    said = (await sessions.messages(sid))[-1].created_at
    model = install_memory_model(
        app,
        {
            "facts": [
                {"text": "The person married", "kind": "event", "event_date": "2023-05-02"},
                {"text": "Bought a bike yesterday", "kind": "event"},
                {"text": "Likes bikes", "event_date": "not a date"},
                # What a conversation can talk a model into: a day at the
                # calendar's end, which "after the gala" would overflow.
                {"text": "Went to the gala", "event_date": "9999-12-31"},
            ]
        },
        {"observations": [], "profile": []},
    )
    created = (await client.post("/memory/extract", json={"session_id": sid})).json()["created"]
    zone = app.state.container.memory.service.zone
    today = when.local(parse_iso(said), zone).date()
    assert f"The conversation took place on {today.isoformat()}." in model.prompts[0]
    married, bike, likes, gala = [(await client.get(f"/facts/{i}")).json()["fact"] for i in created]
    assert married["said_at"] == said and bike["said_at"] == said
    assert (married["event_start"], married["event_end"]) == ("2023-05-02", "2023-05-02")
    yesterday = (today - timedelta(days=1)).isoformat()
    assert (bike["event_start"], bike["event_end"]) == (yesterday, yesterday)
    assert likes["event_start"] is None and gala["event_start"] is None
    r = await client.post("/memory/recall/inspect", json={"query": "What came after the gala?"})
    assert r.status_code == 200, r.text


def _mid(month_start: date, months: int) -> str:
    """The 15th of the month ``months`` away from ``month_start``, at noon UTC."""
    index = month_start.year * 12 + month_start.month - 1 + months
    return f"{index // 12:04d}-{index % 12 + 1:02d}-15T12:00:00Z"


async def test_a_question_about_a_period_ranks_that_periods_fact_first(
    app: Any, client: httpx.AsyncClient
) -> None:
    query = "What did I eat for dinner in June?"
    span = when.time_range(query, utcnow(), app.state.container.memory.service.zone)
    assert span is not None
    may = await _add(client, "I ate pizza for dinner with Anna at Luigi's", _mid(span.start, -1))
    june = await _add(client, "Anna and I had sushi at Kaito", _mid(span.start, 0))
    july = await _add(client, "I ate pasta for dinner with Anna at Luigi's", _mid(span.start, 1))
    dentist = await _add(client, "Saw the dentist about a loose filling", _mid(span.start, 0))
    r = await client.post("/memory/recall/inspect", json={"query": query})
    body = r.json()
    ids = [f["id"] for f in body["facts"]]
    assert ids[0] == june["id"] and {may["id"], july["id"]} <= set(ids)
    assert dentist["id"] in ids  # of the period, though the text search missed it
    assert body["time_range"] == {
        "from": span.start.isoformat(),
        "to": span.end.isoformat(),
        "text": "in June",
    }
    # Without the time stage the look-alikes win: the boost is what lifts June.
    plain = await app.state.container.memory.service.recall(query, use_time=False)
    assert plain.facts[0][0].id != june["id"] and plain.time_range is None
    nothing = await client.post("/memory/recall/inspect", json={"query": "What do I eat?"})
    assert nothing.json()["time_range"] is None


async def test_the_prompt_shows_when_facts_were_said_and_happened(
    app: Any, client: httpx.AsyncClient
) -> None:
    hike = await _add(client, "Went hiking with Sam last Tuesday", "2023-05-08T12:00:00Z")
    bike = await _add(client, "Sam rides a red bike", "2023-05-09T12:00:00Z")
    seen: list[str] = []
    install_model(app, _capturing(seen))
    sid = await new_session(client)
    r = await client.post(
        "/chat/message", json={"message": "Where did I go hiking with Sam?", "session_id": sid}
    )
    assert r.status_code == 202, r.text
    await events_until(app, sid, "run_finished")
    zone = app.state.container.memory.service.zone
    hike_said = when.local(parse_iso(hike["said_at"]), zone).date().isoformat()
    bike_said = when.local(parse_iso(bike["said_at"]), zone).date().isoformat()
    assert (
        f"- Went hiking with Sam last Tuesday (fact #{hike['id']}, fact; added by hand,"
        f" said {hike_said}, about 2023-05-02)" in seen[0]
    )
    assert (
        f"- Sam rides a red bike (fact #{bike['id']}, fact; added by hand, {bike_said})" in seen[0]
    )


async def test_the_recall_tool_shows_dates_too(app: Any, client: httpx.AsyncClient) -> None:
    fact = await _add(client, "Went hiking with Sam last Tuesday", "2023-05-08T12:00:00Z")
    reading, _ = await app.state.container.memory.toolsets()
    said = when.local(parse_iso(fact["said_at"]), app.state.container.memory.service.zone)
    answer = await reading.tools["recall"].function("hiking with Sam")
    assert (
        f"#{fact['id']} (fact, said {said.date().isoformat()}, about 2023-05-02):"
        " Went hiking with Sam last Tuesday" in answer
    )


async def test_older_facts_get_their_event_days_once(app: Any, client: httpx.AsyncClient) -> None:
    service = app.state.container.memory.service
    fact = await _add(client, "Went to Lyon last Tuesday", "2023-05-08T12:00:00Z")
    await service.stores.facts.set_event(fact["id"], None, None)  # as before migration 0420
    await service.kv.set(EVENT_DATES_READ, False)
    await service._date_old_facts()
    again = (await client.get(f"/facts/{fact['id']}")).json()["fact"]
    assert (again["event_start"], again["event_end"]) == ("2023-05-02", "2023-05-02")
    await service.stores.facts.set_event(fact["id"], None, None)
    await service._date_old_facts()  # done already: nothing read again
    assert (await client.get(f"/facts/{fact['id']}")).json()["fact"]["event_start"] is None


async def test_a_question_timed_by_an_event_memory_knows_once(client: httpx.AsyncClient) -> None:
    await _add(client, "Our wedding in Lisbon was on 3 June 2023", "2023-06-10")
    months = ("2023-02-15", "2023-05-20", "2023-08-20", "2023-11-15")
    bought = [await _add(client, "We bought a new sofa for the flat", m) for m in months]
    r = await client.post(
        "/memory/recall/inspect", json={"query": "What did we buy before the wedding?"}
    )
    assert r.status_code == 200, r.text
    body = r.json()
    # The wedding's day, read from its fact, dates the question: the season before it.
    assert body["time_range"] == {
        "from": "2023-03-03",
        "to": "2023-06-03",
        "text": "before the wedding",
    }
    sofas = [f["id"] for f in body["facts"] if f["id"] in {b["id"] for b in bought}]
    assert sofas[0] == bought[1]["id"]  # May's, before the look-alikes of other months
    r = await client.post("/memory/recall/inspect", json={"query": "What did we buy after it?"})
    assert r.json()["time_range"] is None
    # Two concerts: "the concert" names no one event, so no period is guessed.
    await _add(client, "The concert at the Sporthalle was loud", "2023-03-18")
    await _add(client, "The cathedral concert had a lovely choir", "2023-12-18")
    r = await client.post(
        "/memory/recall/inspect", json={"query": "What did we buy after the concert?"}
    )
    assert r.json()["time_range"] is None
    # "Looks after" is not about time.
    r = await client.post(
        "/memory/recall/inspect", json={"query": "Who looks after the wedding photos?"}
    )
    assert r.json()["time_range"] is None


async def test_dates_at_the_ends_of_the_calendar_are_refused_or_ignored(
    client: httpx.AsyncClient,
) -> None:
    """Year 1 or 9999 is a typo or a probe; kept, it broke every later recall
    with a time (a said_at stored as "1-01-01T…", a day after 9999-12-31)."""
    for said in ("0001-01-01", "0001-01-01T00:00:00-05:00", "9999-12-31T23:00:00-05:00"):
        r = await client.post("/facts", json={"text": "x", "said_at": said})
        assert r.status_code == 422, r.text
        assert r.json()["errors"][0]["loc"][-1] == "said_at"
    far = await _add(client, "[9999-12-31] The wedding in the far future")
    old = await _add(client, "[0001-01-01] The wedding of old")
    assert far["event_start"] is None and old["event_start"] is None
    for query in ("What happened on 9999-12-31?", "on 0001-01-01?", "Before the wedding?"):
        r = await client.post("/memory/recall/inspect", json={"query": query})
        assert r.status_code == 200, r.text


async def test_an_import_reads_its_dates_without_holding_the_server(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Dates cost dateparser milliseconds per fact: 5000 of them read on the
    event loop held every other request (and stream) for seconds."""
    real = when.stamp

    def slow(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.02)  # a fact with a date or two, on a busy machine
        return real(*args, **kwargs)

    monkeypatch.setattr(when, "stamp", slow)
    gaps: list[float] = []

    async def ticking() -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(0.01)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    ticker = asyncio.create_task(ticking())
    facts = [{"text": f"[8 May 2023] fact {i}"} for i in range(40)]
    r = await client.post("/facts/import", json={"facts": facts})
    ticker.cancel()
    assert r.status_code == 201, r.text
    assert max(gaps) < 0.4  # 40 x 20 ms on the loop would be 0.8 s at once
