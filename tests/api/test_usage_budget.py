"""Budgets: a cap reached stops the run with a clear run_error; 80 % sends one notice."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from typing import Any

import httpx
from tests.support.chat_models import events_until, install_model, resolved, scripted
from tests.support.fake_http import recording_server
from tests.support.triggers import never_soon


async def _chat(app: Any, client: httpx.AsyncClient, sid: str) -> list[dict]:
    after = await app.state.container.events.store.last_seq(sid)
    r = await client.post("/chat/message", json={"message": "hi", "session_id": sid})
    assert r.status_code == 202, r.text
    events = await events_until(app, sid, ("run_finished", "run_error"), after=after)
    while app.state.container.chat.foreground.get(sid):
        await asyncio.sleep(0.01)
    return events


async def test_daily_budget_stops_runs_and_notices_once(
    app: Any, client: httpx.AsyncClient
) -> None:
    priced = replace(resolved(scripted("Hello there")), provider="openai", model_id="gpt-4.1")
    install_model(app, priced)
    with recording_server(lambda m, p, b: (200, {})) as hook:
        body = {"name": "phone", "type": "webhook", "config": {"url": hook.url}}
        assert (await client.post("/notifiers/configs", json=body)).status_code == 201
        assert (await client.patch("/config", json={"default_notifier": "phone"})).is_success
        await _budget_run(app, client)
    # the default notifier got the 80 % notice, once
    sent = [b for m, _p, b in hook.requests if m == "POST"]
    assert len(sent) == 1 and "daily budget" in json.dumps(sent[0]), hook.requests


async def _budget_run(app: Any, client: httpx.AsyncClient) -> None:
    r = await client.patch("/config", json={"budget_daily": 0.0001})
    assert r.status_code == 200 and r.json()["budget_daily"] == 0.0001
    sid = (await client.post("/sessions", json={})).json()["session_id"]
    first = await _chat(app, client, sid)  # nothing spent yet: it runs, and passes the cap
    assert first[-1]["type"] == "run_finished"
    second = await _chat(app, client, sid)
    error = second[-1]
    assert error["type"] == "run_error" and error["recoverable"] is False
    assert error["message"].startswith("The daily budget of $0.0001 is used up ($0.00")
    assert 'PATCH /config {"budget_daily": …}' in error["message"]
    assert "wait until tomorrow" in error["message"]
    await _chat(app, client, sid)
    events = await app.state.container.events.replay(sid, 0)
    notices = [e.data for e in events if e.type == "budget_notice"]
    assert len(notices) == 1 and "daily budget" in notices[0]["message"]
    # null removes the cap; the runs go on.
    r = await client.patch("/config", json={"budget_daily": None})
    assert r.json()["budget_daily"] is None
    assert (await _chat(app, client, sid))[-1]["type"] == "run_finished"
    assert (await client.patch("/config", json={"budget_daily": -1})).status_code == 422


async def test_automation_budget(app: Any, client: httpx.AsyncClient) -> None:
    priced = replace(resolved(scripted("Done.")), provider="openai", model_id="gpt-4.1")
    install_model(app, priced)
    body = {"name": "B", "description": "Say hi.", "trigger": never_soon(), "budget": 0.00001}
    auto = (await client.post("/automations", json=body)).json()
    assert auto["budget"] == 0.00001
    statuses = []
    for _ in range(2):
        await client.post(f"/automations/{auto['id']}/run")
        for _ in range(200):
            detail = (await client.get(f"/automations/{auto['id']}")).json()
            done = [x for x in detail["runs"] if x["status"] != "running"]
            if not detail["running"] and len(done) > len(statuses):
                break
            await asyncio.sleep(0.05)
        statuses.append(done[0])
    assert statuses[0]["status"] == "ok"
    last = (await client.get(f"/automations/{auto['id']}")).json()
    assert last["last_status"] == "error", last
    assert f"automation {auto['id']}'s daily budget" in last["last_result"]
    assert f'PATCH /automations/{auto["id"]} {{"budget": …}}' in last["last_result"]
    r = await client.patch(f"/automations/{auto['id']}", json={"budget": None})
    assert r.status_code == 200 and r.json()["budget"] is None


async def test_a_reached_budget_pauses_memory_and_refuses_compaction(
    app: Any, client: httpx.AsyncClient
) -> None:
    from famulus.store.usage import UsageEntry
    from famulus.timeutil import now_iso

    sid = (await client.post("/sessions", json={})).json()["session_id"]
    store = app.state.container.sessions.store
    for i in range(3):
        await store.add_message(sid, "user", f"question {i}")
        await store.add_message(sid, "assistant", f"answer {i}")
    install_model(app, scripted("SUMMARY"))
    spent = UsageEntry(now_iso(), "chat", None, None, None, "openai", "m", 1, 1, 0, 0, 2.0, None)
    await app.state.container.usage.store.add(spent)
    await client.patch("/config", json={"budget_monthly": 1.5})
    r = await client.post("/compact", json={"session_id": sid})
    assert r.status_code == 409 and "monthly budget of $1.50" in r.json()["detail"], r.text
    assert "wait until next month" in r.json()["detail"]
    r = await client.post("/memory/extract", json={"session_id": sid})
    assert r.status_code == 409 and "budget_monthly" in r.json()["detail"], r.text
    jobs = app.state.container.memory.jobs
    await jobs._later(sid, 0)  # the quiet timer firing: paused, not raised
    assert jobs._failures[sid] == 1
