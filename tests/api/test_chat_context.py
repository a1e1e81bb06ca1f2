"""GET /context, POST /compact (manual and automatic), restart recovery, delete cancels."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from pydantic_ai.models.function import FunctionModel
from tests.support.chat_models import events_until, install_model, resolved, scripted


async def _chat(app: Any, client: httpx.AsyncClient, sid: str, text: str) -> None:
    await client.post("/chat/message", json={"message": text, "session_id": sid})
    after = await app.state.container.events.store.last_seq(sid)
    await events_until(app, sid, ("run_finished", "run_error"), after=max(0, after - 50))
    while app.state.container.chat.foreground.get(sid):
        await asyncio.sleep(0.01)


async def test_context_and_compact(app: Any, client: httpx.AsyncClient) -> None:
    def answer(messages: list[Any]) -> str:
        text = repr(messages[-1])
        if (
            "compress a conversation" in repr(messages)
            or "Later conversation" in text
            or "Person:" in text
        ):
            return "SUMMARY: they talked about numbers."
        return "answer " + "x" * 400

    install_model(app, scripted(answer))
    sid = (await client.post("/sessions", json={})).json()["session_id"]
    ctx0 = (await client.get("/context", params={"session_id": sid})).json()
    assert ctx0["model"] == "test-model" and ctx0["limit"] == 100_000
    assert ctx0["message_count"] == 0 and ctx0["tool_count"] >= 3 and ctx0["total"] > 0
    r = await client.post("/compact", json={"session_id": sid})
    assert r.json()["status"] == "nothing_to_compact"
    for i in range(4):
        await _chat(app, client, sid, f"question {i} " + "y" * 400)
    ctx1 = (await client.get("/context", params={"session_id": sid})).json()
    assert ctx1["message_count"] == 8 and ctx1["total"] > ctx0["total"]
    r = await client.post("/compact", json={"session_id": sid})
    body = r.json()
    assert body["status"] == "compacted", body
    assert body["after_tokens"] < body["before_tokens"]
    ctx2 = (await client.get("/context", params={"session_id": sid})).json()
    assert ctx2["message_count"] == 4 and ctx2["total"] == body["after_tokens"]
    hist = (await client.get("/session/history", params={"session_id": sid})).json()["messages"]
    assert len(hist) == 8  # raw history intact
    events = await app.state.container.events.replay(sid, 0)
    compacted = [e.data for e in events if e.type == "compacted"]
    assert compacted[-1]["before_tokens"] == body["before_tokens"]


async def test_failed_summary_leaves_conversation(app: Any, client: httpx.AsyncClient) -> None:
    install_model(app, scripted("fine " + "z" * 300))
    sid = (await client.post("/sessions", json={})).json()["session_id"]
    for i in range(3):
        await _chat(app, client, sid, f"q{i}")

    async def broken(messages: list[Any], info: Any) -> Any:
        raise RuntimeError("model down")
        yield ""  # pragma: no cover

    def broken_req(messages: list[Any], info: Any) -> Any:
        raise RuntimeError("model down")

    install_model(app, FunctionModel(broken_req, stream_function=broken))
    before = (await client.get("/context", params={"session_id": sid})).json()
    r = await client.post("/compact", json={"session_id": sid})
    assert r.status_code == 502 and r.json()["code"] == "upstream_error"
    after = (await client.get("/context", params={"session_id": sid})).json()
    assert after == before


async def test_auto_compaction_near_limit(app: Any, client: httpx.AsyncClient) -> None:
    def answer(messages: list[Any]) -> str:
        if "Person:" in repr(messages[-1]):
            return "SUMMARY."
        return "reply " + "r" * 800

    sid = (await client.post("/sessions", json={})).json()["session_id"]
    install_model(app, resolved(scripted(answer), context_window=2_000))
    for i in range(4):
        await _chat(app, client, sid, f"q{i} " + "p" * 1200)
    events = [e.data for e in await app.state.container.events.replay(sid, 0)]
    assert any(e["type"] == "compacted" for e in events), [e["type"] for e in events]
    compacted = next(e for e in events if e["type"] == "compacted")
    assert compacted["after_tokens"] < compacted["before_tokens"] and compacted.get("run_id")


async def test_restart_marks_interrupted_runs(settings: Any) -> None:
    from famulus.app import create_app

    app1 = create_app(settings)
    async with app1.router.lifespan_context(app1):
        c = app1.state.container
        s = await c.sessions.create("x")
        await c.sessions.store.add_message(s.session_id, "user", "hello", run_id="r_dead")
        await c.chat.runs.create("r_dead", s.session_id, model_id="m", skip_approvals=False)
        # Simulate a crash: the run row stays 'running', stop hooks never see it.
    app2 = create_app(settings)
    async with app2.router.lifespan_context(app2):
        c = app2.state.container
        row = await c.chat.runs.get("r_dead")
        assert row is not None and row.status == "interrupted"
        events = [e.data for e in await c.events.replay(s.session_id, 0)]
        assert events[-1]["type"] == "run_error" and events[-1]["recoverable"] is False
        msgs = await c.sessions.store.messages(s.session_id)
        assert [m.content for m in msgs] == ["hello"]


async def test_permanent_delete_cancels_run(app: Any, client: httpx.AsyncClient) -> None:
    install_model(app, scripted(" ".join(["slow"] * 300), delay=0.02))
    sid = (await client.post("/sessions", json={})).json()["session_id"]
    await client.post("/chat/message", json={"message": "go", "session_id": sid})
    await asyncio.sleep(0.2)
    r = await client.delete(f"/sessions/{sid}/permanent")
    assert r.status_code == 200
    assert not app.state.container.chat.active


async def test_context_without_a_chat_model(app: Any, client: httpx.AsyncClient) -> None:
    """Usage is measured with no model; compaction needs one only when there is work."""
    sid = (await client.post("/sessions", json={})).json()["session_id"]
    ctx = await client.get("/context", params={"session_id": sid})
    assert ctx.status_code == 200, ctx.text
    body = ctx.json()
    assert body["model"] is None and body["limit"] is None
    assert body["total"] > 0 and body["message_count"] == 0 and body["tool_count"] >= 3
    r = await client.post("/compact", json={"session_id": sid})
    assert r.status_code == 200 and r.json()["status"] == "nothing_to_compact"
    store = app.state.container.sessions.store
    for i in range(4):
        await store.add_message(sid, "user", f"question {i}", run_id=f"r{i}")
        await store.add_message(sid, "assistant", f"answer {i}", run_id=f"r{i}")
    assert (await client.get("/context", params={"session_id": sid})).json()["message_count"] == 8
    r = await client.post("/compact", json={"session_id": sid})
    assert r.status_code == 503 and r.json()["code"] == "not_configured"
