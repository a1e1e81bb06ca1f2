"""Time in memory (issue 12): when facts were said, when their events happened,
questions about a period, and dates in what the agent is given."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
from tests.support.memory_models import install_memory_model

from famulus.memory import when
from famulus.timeutil import parse_iso


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
            ]
        },
        {"observations": [], "profile": []},
    )
    created = (await client.post("/memory/extract", json={"session_id": sid})).json()["created"]
    zone = app.state.container.memory.service.zone
    today = when.local(parse_iso(said), zone).date()
    assert f"The conversation took place on {today.isoformat()}." in model.prompts[0]
    married, bike, likes = [(await client.get(f"/facts/{i}")).json()["fact"] for i in created]
    assert married["said_at"] == said and bike["said_at"] == said
    assert (married["event_start"], married["event_end"]) == ("2023-05-02", "2023-05-02")
    yesterday = (today - timedelta(days=1)).isoformat()
    assert (bike["event_start"], bike["event_end"]) == (yesterday, yesterday)
    assert likes["event_start"] is None
