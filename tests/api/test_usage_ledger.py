"""The usage ledger: every kind of model call leaves a row, priced by genai-prices."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
from typing import Any
from zoneinfo import ZoneInfo

import httpx
from genai_prices import Usage, calc_price
from genai_prices.data_snapshot import get_snapshot
from pydantic_ai.usage import RequestUsage
from tests.support.chat_models import events_until, install_model, resolved, scripted
from tests.support.memory_models import install_memory_model
from tests.support.triggers import never_soon

from famulus.store.usage import UsageEntry
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
    # Priced offline, from the bundled snapshot: no price updater was started.
    assert get_snapshot().from_auto_update is False
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


async def _seed(app: Any) -> None:
    """Three requests over two days, two models, a session and an automation."""
    store = app.state.container.usage.store
    rows = [
        ("2026-03-01T10:00:00.000Z", "chat", "s_1", None, "openai", "gpt-4.1", 100, 0.5),
        ("2026-03-01T11:00:00.000Z", "automation", "s_2", 7, "openai", "gpt-4.1", 50, 0.25),
        ("2026-03-02T09:00:00.000Z", "memory", "s_1", None, "custom", "llama", 10, None),
    ]
    for ts, source, sid, aid, provider, model, tokens, cost in rows:
        await store.add(
            UsageEntry(ts, source, sid, None, aid, provider, model, tokens, 1, 2, 0, cost, None)
        )


async def test_get_usage_groups_and_validation(app: Any, client: httpx.AsyncClient) -> None:
    app.state.container.usage.zone = ZoneInfo("UTC")
    await _seed(app)
    span = {"from": "2026-03-01", "to": "2026-03-02"}
    r = await client.get("/usage", params={**span, "group_by": "day"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["group_by"] == "day" and body["from"].startswith("2026-03-0")
    assert body["total"] == {
        "input_tokens": 160,
        "output_tokens": 3,
        "cache_read_tokens": 6,
        "cost": 0.75,
        "calls": 3,
    }
    days = {g["key"]: g for g in body["groups"]}
    assert days["2026-03-01"]["cost"] == 0.75 and days["2026-03-01"]["calls"] == 2
    assert days["2026-03-02"]["cost"] is None  # unknown price, not zero
    models = (await client.get("/usage", params={**span, "group_by": "model"})).json()
    assert {g["key"]: g["calls"] for g in models["groups"]} == {
        "custom:llama": 1,
        "openai:gpt-4.1": 2,
    }
    sources = (await client.get("/usage", params={**span, "group_by": "source"})).json()
    assert sorted(g["key"] for g in sources["groups"]) == ["automation", "chat", "memory"]
    autos = (await client.get("/usage", params={**span, "group_by": "automation"})).json()
    assert {g["key"]: g["cost"] for g in autos["groups"]} == {None: 0.5, "7": 0.25}
    sessions = (await client.get("/usage", params={**span, "group_by": "session"})).json()
    assert {g["key"] for g in sessions["groups"]} == {"s_1", "s_2"}
    one_day = (await client.get("/usage", params={"from": "2026-03-02", "to": "2026-03-02"})).json()
    assert one_day["total"]["calls"] == 1
    for bad in (
        {"group_by": "week"},
        {"from": "yesterday"},
        {"from": "2026-03-03", "to": "2026-03-01"},
    ):
        assert (await client.get("/usage", params=bad)).status_code == 422, bad
    default = (await client.get("/usage")).json()
    assert default["group_by"] == "day" and default["total"]["calls"] == 0


async def test_context_follows_the_providers_count(app: Any, client: httpx.AsyncClient) -> None:
    """The provider counted 4× our estimate (as for Chinese text): /context follows it."""
    install_model(app, scripted("ok"))
    sid = (await client.post("/sessions", json={})).json()["session_id"]
    estimated = (await client.get("/context", params={"session_id": sid})).json()["total"]
    store = app.state.container.usage.store

    def entry(source: str, reported: int) -> UsageEntry:
        ts = "2026-03-01T10:00:00.000Z"
        return UsageEntry(
            ts, source, sid, "r", None, "openai", "m", reported, 1, 0, 0, None, None, 1000
        )

    await store.add(entry("chat", 4000))
    await store.add(entry("research", 500))  # a sub-agent's request is another context
    reported = (await client.get("/context", params={"session_id": sid})).json()["total"]
    assert reported == round(estimated * 4)


def _famulus_usage(settings: Any, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAMULUS_")}
    env |= {"FAMULUS_HOME": str(settings.home), "FAMULUS_TIMEZONE": "UTC", "COLUMNS": "200"}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    return subprocess.run(
        [sys.executable, "-m", "famulus.cli", "usage", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


async def test_famulus_usage_prints_a_table(app: Any, settings: Any) -> None:
    """Read-only from the database, beside the running app."""
    await _seed(app)
    span = ("--from", "2026-03-01", "--to", "2026-03-02")
    done = await asyncio.to_thread(_famulus_usage, settings, *span, "--by", "model")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    gpt = next(line for line in lines if "openai:gpt-4.1" in line)
    assert "$0.7500" in gpt and " 150 " in gpt
    assert "unknown" in next(line for line in lines if "custom:llama" in line)
    assert "$0.7500" in next(line for line in lines if "Total" in line)
    bad = await asyncio.to_thread(_famulus_usage, settings, "--by", "week")
    assert bad.returncode == 2 and "--by must be one of" in bad.stderr


async def test_context_uses_what_a_real_client_reported(
    app: Any, client: httpx.AsyncClient, allow_model_requests: None
) -> None:
    """An OpenAI-compatible server counts 50 000 prompt tokens for a short chat
    (as a tokenizer might for dense CJK text): /context follows its count."""
    from tests.support.scripted_openai import ScriptedOpenAI, Turn

    from famulus.llm.builder import build_model

    with ScriptedOpenAI() as server:
        model = build_model("custom", "scripted-model", api_key=None, base_url=server.base_url)
        install_model(app, model)
        sid = (await client.post("/sessions", json={})).json()["session_id"]
        server.push(Turn(text="好的", prompt_tokens=50_000))
        events = await _chat(app, client, sid, "你好" * 100)
        assert events[-1]["usage"]["prompt_tokens"] == 50_000
        row = ledger(app)[-1]
        assert row["input_tokens"] == 50_000 and 0 < row["estimated_input"] < 10_000
        total = (await client.get("/context", params={"session_id": sid})).json()["total"]
        assert total >= 50_000  # the estimate alone would say under 10 000
