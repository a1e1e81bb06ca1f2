"""Compaction that frees little is not repeated every turn; a failed summary says why."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import AgentInfo, FunctionModel
from tests.support.chat_models import events_until, install_model, resolved, scripted


async def _chat(app: Any, client: httpx.AsyncClient, sid: str, text: str) -> None:
    r = await client.post("/chat/message", json={"message": text, "session_id": sid})
    assert r.status_code == 202, r.text
    run_id = r.json()["run_id"]
    events = await events_until(app, sid, ("run_finished", "run_error"), timeout=10)
    while not any(e.get("run_id") == run_id and e["type"] == "run_finished" for e in events):
        assert not any(e.get("run_id") == run_id and e["type"] == "run_error" for e in events)
        await asyncio.sleep(0.02)
        events = await events_until(app, sid, "run_finished")
    while app.state.container.chat.foreground.get(sid):
        await asyncio.sleep(0.01)


def _is_summary_request(messages: list[ModelMessage]) -> bool:
    return "compress a conversation" in repr(messages)


async def test_an_ineffective_compaction_is_not_repeated_every_turn(
    app: Any, client: httpx.AsyncClient
) -> None:
    """Long directives fill most of the window: folding a few short turns frees almost nothing."""
    summaries = {"n": 0}

    def answer(messages: list[ModelMessage]) -> str:
        if _is_summary_request(messages):
            summaries["n"] += 1
            return "SUMMARY: short questions were asked."
        return "fine"

    assert (
        await client.put("/directives", json={"content": "Be kind. " * 2000})
    ).status_code == 200
    sid = (await client.post("/sessions", json={})).json()["session_id"]
    install_model(app, scripted(answer))
    base = (await client.get("/context", params={"session_id": sid})).json()["total"]
    window = int(base / 0.79)  # the prompt alone is 79 % of the window
    install_model(app, resolved(scripted(answer), context_window=window))
    small = "p" * (window // 100 * 4)  # about 1 % of the window per message

    for i in range(8):
        await _chat(app, client, sid, f"q{i} {small}")
    events = [e.data for e in await app.state.container.events.replay(sid, 0)]
    compacted = [e for e in events if e["type"] == "compacted"]
    # Near the limit from the 2nd turn on, with turns to fold from the 3rd: without the
    # rule every later turn would pay for a summary; with it, one was tried.
    assert summaries["n"] == 1 and len(compacted) == 1, compacted
    assert compacted[0]["before_tokens"] - compacted[0]["after_tokens"] < (
        0.2 * compacted[0]["before_tokens"]
    )

    # Once there is materially more to fold (a long turn leaves the kept window), it runs again.
    await _chat(app, client, sid, "long " + "w" * (window // 5 * 4))
    for i in range(2):
        await _chat(app, client, sid, f"r{i} {small}")
    assert summaries["n"] == 2


async def test_a_manual_compaction_runs_even_when_it_frees_little(
    app: Any, client: httpx.AsyncClient
) -> None:
    summaries = {"n": 0}

    def answer(messages: list[ModelMessage]) -> str:
        if _is_summary_request(messages):
            summaries["n"] += 1
            return "SUMMARY: " + "s" * 200  # longer than what it folds
        return "ok"

    install_model(app, scripted(answer))
    sid = (await client.post("/sessions", json={})).json()["session_id"]
    for i in range(4):
        await _chat(app, client, sid, f"q{i}")
    for i in range(2):
        r = await client.post("/compact", json={"session_id": sid})
        assert r.status_code == 200 and r.json()["status"] == "compacted", r.text
        body = r.json()
        assert body["before_tokens"] - body["after_tokens"] < 0.2 * body["before_tokens"]
        await _chat(app, client, sid, f"more {i}")
    assert summaries["n"] == 2


async def test_a_failed_summary_says_why(app: Any, client: httpx.AsyncClient) -> None:
    install_model(app, scripted("fine"))
    sid = (await client.post("/sessions", json={})).json()["session_id"]
    for i in range(3):
        await _chat(app, client, sid, f"q{i}")

    def refuse(messages: list[ModelMessage], info: AgentInfo) -> Any:
        raise ModelHTTPError(
            503,
            "m",
            {"error": {"message": "the summarizer is overloaded"}},
            headers={"authorization": "Bearer sk-secret-123"},
        )

    async def refuse_stream(messages: list[ModelMessage], info: AgentInfo) -> Any:
        refuse(messages, info)
        yield ""  # pragma: no cover

    install_model(app, FunctionModel(refuse, stream_function=refuse_stream))
    r = await client.post("/compact", json={"session_id": sid})
    assert r.status_code == 502 and r.json()["code"] == "upstream_error"
    detail = r.json()["detail"]
    assert "nothing was changed" in detail
    assert "HTTP 503" in detail and "the summarizer is overloaded" in detail
    assert "sk-secret" not in r.text

    def empty(messages: list[ModelMessage], info: AgentInfo) -> Any:
        from pydantic_ai.messages import ModelResponse, TextPart

        return ModelResponse(parts=[TextPart("   ")])

    install_model(app, FunctionModel(empty))
    r = await client.post("/compact", json={"session_id": sid})
    assert r.status_code == 502 and "empty summary" in r.json()["detail"]
