"""The usage ledger: every kind of model call leaves a row, priced by genai-prices."""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Any

import httpx
from genai_prices import Usage, calc_price
from pydantic_ai.usage import RequestUsage
from tests.support.chat_models import events_until, install_model, resolved, scripted
from tests.support.memory_models import install_memory_model
from tests.support.triggers import never_soon

from famulus.usage import pricing


def ledger(app: Any) -> list[dict[str, Any]]:
    path = app.state.container.core.db.path
    with sqlite3.connect(path) as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute("SELECT * FROM usage_ledger ORDER BY id")]


async def _chat(app: Any, client: httpx.AsyncClient, sid: str, text: str) -> list[dict]:
    r = await client.post("/chat/message", json={"message": text, "session_id": sid})
    assert r.status_code == 202, r.text
    after = await app.state.container.events.store.last_seq(sid)
    events = await events_until(app, sid, ("run_finished", "run_error"), after=max(0, after - 50))
    while app.state.container.chat.foreground.get(sid):
        await asyncio.sleep(0.01)
    return events


async def test_chat_rows_priced_by_genai_prices_survive_deletion(
    app: Any, client: httpx.AsyncClient
) -> None:
    model = resolved(scripted("Hello there"), model_id="gpt-4.1")
    install_model(app, type(model)(**{**model.__dict__, "provider": "openai"}))
    sid = (await client.post("/sessions", json={})).json()["session_id"]
    events = await _chat(app, client, sid, "hi")
    rows = ledger(app)
    assert len(rows) == 1
    row = rows[0]
    assert row["source"] == "chat" and row["session_id"] == sid
    assert row["run_id"] == events[0]["run_id"] and row["automation_id"] is None
    assert (row["provider"], row["model"]) == ("openai", "gpt-4.1")
    assert row["input_tokens"] > 0 and row["output_tokens"] > 0
    expected = calc_price(
        Usage(input_tokens=row["input_tokens"], output_tokens=row["output_tokens"]),
        "gpt-4.1",
        provider_id="openai",
    ).total_price
    assert row["cost"] == float(expected) and row["priced_by"] == "genai-prices"
    assert events[-1]["usage"]["cost"] == round(float(expected), 6)
    r = await client.delete(f"/sessions/{sid}/permanent")
    assert r.status_code in (200, 204), r.text
    assert ledger(app) == rows


def test_unknown_prices_stay_unknown() -> None:
    usage = RequestUsage(input_tokens=1000, output_tokens=10, cache_read_tokens=200)
    model = resolved(scripted("x"), model_id="my-local-llama")
    assert pricing.price(type(model)(**{**model.__dict__, "provider": "custom"}), usage) == (
        None,
        None,
    )
    codex = type(model)(**{**model.__dict__, "provider": "openai-codex", "model_id": "gpt-5"})
    assert pricing.price(codex, usage) == (None, None)
    claude = type(model)(
        **{**model.__dict__, "provider": "anthropic", "model_id": "claude-sonnet-4-5"}
    )
    cost, by = pricing.price(claude, usage)
    direct = calc_price(usage, "claude-sonnet-4-5", provider_id="anthropic").total_price
    assert by == "genai-prices" and cost == float(direct)
    # Cache reads are cheaper than fresh input: the price is not input × rate.
    fresh = RequestUsage(input_tokens=1000, output_tokens=10)
    assert cost < float(calc_price(fresh, "claude-sonnet-4-5", provider_id="anthropic").total_price)


async def test_compaction_memory_and_automation_rows(app: Any, client: httpx.AsyncClient) -> None:
    def answer(messages: list[Any]) -> str:
        if "compress a conversation" in repr(messages):
            return "SUMMARY: numbers."
        return "answer " + "x" * 200

    install_model(app, scripted(answer))
    sid = (await client.post("/sessions", json={})).json()["session_id"]
    for i in range(3):
        await _chat(app, client, sid, f"question {i}")
    r = await client.post("/compact", json={"session_id": sid})
    assert r.json()["status"] == "compacted", r.text
    compaction = [row for row in ledger(app) if row["source"] == "compaction"]
    assert len(compaction) == 1 and compaction[0]["session_id"] == sid
    assert compaction[0]["run_id"] is None and compaction[0]["cost"] is None

    install_memory_model(app, {"facts": []})
    r = await client.post("/memory/extract", json={"session_id": sid})
    assert r.status_code == 200, r.text
    memory = [row for row in ledger(app) if row["source"] == "memory"]
    assert memory and memory[0]["session_id"] == sid and memory[0]["run_id"] is None

    body = {"name": "Brief", "description": "Say hi.", "trigger": never_soon()}
    auto = (await client.post("/automations", json=body)).json()
    await client.post(f"/automations/{auto['id']}/run")
    for _ in range(200):
        rows = [row for row in ledger(app) if row["source"] == "automation"]
        if rows:
            break
        await asyncio.sleep(0.05)
    assert rows and rows[0]["automation_id"] == auto["id"] and rows[0]["session_id"]
