"""The chat run through the in-process API with scripted pydantic-ai models."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from tests.support.chat_models import events_until, install_model, scripted, until_streaming
from tests.support.sessions import new_session


async def test_plain_answer_events_history_usage(app: Any, client: httpx.AsyncClient) -> None:
    install_model(app, scripted("Hello there"), prices=(1.0, 2.0))
    sid = await new_session(client)
    r = await client.post("/chat/message", json={"message": "hi", "session_id": sid})
    assert r.status_code == 202, r.text
    body = r.json()
    assert body["queued"] is False and body["session_id"] == sid
    events = await events_until(app, sid, "run_finished")
    types = [e["type"] for e in events]
    assert types[0] == "run_started"
    assert "text" in types and types[-1] == "run_finished"
    started = events[0]
    assert started["run_id"] == body["run_id"] and started["session_name"] == "t"
    assert started["skip_approvals"] is False
    text = next(e for e in events if e["type"] == "text")
    assert text["content"].strip() == "Hello there" and text["depth"] == 0
    usage = events[-1]["usage"]
    assert set(usage) == {"prompt_tokens", "completion_tokens", "cache_read_tokens", "cost"}
    assert usage["prompt_tokens"] > 0 and usage["cost"] > 0
    hist = (await client.get("/session/history", params={"session_id": sid})).json()["messages"]
    assert [m["role"] for m in hist] == ["user", "assistant"]
    assert hist[1]["content"].strip() == "Hello there"


async def test_tool_call_and_history(app: Any, client: httpx.AsyncClient) -> None:
    install_model(app, scripted(("tool", "current_time", "{}"), "It is late"))
    sid = await new_session(client)
    await client.post("/chat/message", json={"message": "time?", "session_id": sid})
    events = await events_until(app, sid, "run_finished")
    call = next(e for e in events if e["type"] == "tool_call")
    assert call["name"] == "current_time" and call["depth"] == 0 and call["parent_id"] is None
    assert call["description"] and call["args"] == {}
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["tool_id"] == call["tool_id"] and result["error"] is False
    assert result["duration_ms"] >= 0 and result["preview"]
    hist = (await client.get("/session/history", params={"session_id": sid})).json()["messages"]
    assert [m["role"] for m in hist] == ["user", "assistant", "tool", "assistant"]
    assert hist[1]["tool_calls"][0]["name"] == "current_time"
    assert hist[2]["tool_call_id"] == call["tool_id"]


async def _approval_flow(
    app: Any, client: httpx.AsyncClient, approved: bool
) -> tuple[str, list[dict[str, Any]]]:
    install_model(
        app, scripted(("tool", "update_directives", '{"mode":"append","text":"Be brief."}'), "Done")
    )
    sid = await new_session(client)
    run_id = (
        await client.post("/chat/message", json={"message": "remember", "session_id": sid})
    ).json()["run_id"]
    events = await events_until(app, sid, "approval_needed")
    need = events[-1]
    assert need["name"] == "update_directives" and need["args"]["text"] == "Be brief."
    assert need["description"]
    r = await client.post(
        "/tools/result",
        json={
            "run_id": run_id,
            "tool_id": need["tool_id"],
            "approved": approved,
            **({} if approved else {"result": "not now"}),
        },
    )
    assert r.status_code == 200, r.text
    return sid, await events_until(app, sid, "run_finished")


async def test_approval_granted_runs_tool(app: Any, client: httpx.AsyncClient) -> None:
    sid, events = await _approval_flow(app, client, True)
    assert (await client.get("/directives")).json()["content"] == "Be brief."
    result = next(e for e in events if e["type"] == "tool_result")
    assert "updated" in result["result"]


async def test_approval_denied_does_not_run(app: Any, client: httpx.AsyncClient) -> None:
    sid, events = await _approval_flow(app, client, False)
    assert (await client.get("/directives")).json()["content"] == ""
    result = next(e for e in events if e["type"] == "tool_result")
    assert "declined" in result["result"] and "not now" in result["result"]


async def test_skip_approvals(app: Any, client: httpx.AsyncClient) -> None:
    install_model(
        app, scripted(("tool", "update_directives", '{"mode":"replace","text":"X"}'), "Done")
    )
    sid = await new_session(client)
    await client.post(
        "/chat/message", json={"message": "go", "session_id": sid, "skip_approvals": True}
    )
    events = await events_until(app, sid, "run_finished")
    assert "approval_needed" not in [e["type"] for e in events]
    assert (await client.get("/directives")).json()["content"] == "X"


async def test_unknown_tool_result_404(app: Any, client: httpx.AsyncClient) -> None:
    r = await client.post(
        "/tools/result", json={"run_id": "r_nope", "tool_id": "x", "approved": True}
    )
    assert r.status_code == 404 and r.json()["code"] == "not_found"


async def test_cancel_mid_stream_keeps_partial(app: Any, client: httpx.AsyncClient) -> None:
    install_model(app, scripted(" ".join(f"w{i}" for i in range(200)), delay=0.02))
    sid = await new_session(client)
    run_id = (
        await client.post("/chat/message", json={"message": "long", "session_id": sid})
    ).json()["run_id"]
    await until_streaming(app, sid)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    r = await client.post("/cancel", json={"session_id": sid})
    elapsed = loop.time() - t0
    assert r.json() == {"status": "cancelled", "run_id": run_id}
    assert elapsed < 1.0
    events = await events_until(app, sid, "run_cancelled")
    assert events[-1]["run_id"] == run_id
    hist = (await client.get("/session/history", params={"session_id": sid})).json()["messages"]
    assert hist[-1]["role"] == "assistant" and hist[-1]["content"].startswith("w0 w1")
    assert (await client.post("/cancel", json={"session_id": sid})).json() == {"status": "idle"}
    r = await client.post("/chat/background", json={"run_id": run_id})
    assert r.status_code == 409


async def test_cancel_validation(client: httpx.AsyncClient) -> None:
    assert (await client.post("/cancel", json={})).status_code == 422
    assert (await client.post("/cancel", json={"run_id": "r_x"})).status_code == 404
    assert (await client.post("/chat/background", json={"run_id": "r_x"})).status_code == 404


async def test_queued_message_is_ingested(app: Any, client: httpx.AsyncClient) -> None:
    seen: list[str] = []

    def second(messages: list[Any]) -> str:
        seen.append(repr(messages))
        return "Got both"

    install_model(app, scripted(("tool", "current_time", "{}"), second))
    sid = await new_session(client)
    first = (await client.post("/chat/message", json={"message": "one", "session_id": sid})).json()
    r = await client.post(
        "/chat/message", json={"message": "two", "session_id": sid, "client_id": "c-2"}
    )
    assert r.json() == {"run_id": first["run_id"], "session_id": sid, "queued": True}
    events = await events_until(app, sid, "run_finished")
    ingested = [e for e in events if e["type"] == "message_ingested"]
    assert (
        ingested and ingested[0]["client_id"] == "c-2" and ingested[0]["run_id"] == first["run_id"]
    )
    assert any("two" in s for s in seen)
    hist = (await client.get("/session/history", params={"session_id": sid})).json()["messages"]
    assert [m["content"] for m in hist if m["role"] == "user"] == ["one", "two"]


async def test_background_run(app: Any, client: httpx.AsyncClient) -> None:
    install_model(app, scripted("background result text", delay=0.1))
    sid = await new_session(client)
    run_id = (
        await client.post("/chat/message", json={"message": "slow job", "session_id": sid})
    ).json()["run_id"]
    r = await client.post("/chat/background", json={"run_id": run_id})
    assert r.json() == {"status": "backgrounded", "run_id": run_id}
    events = await events_until(app, sid, "run_finished")
    types = [e["type"] for e in events]
    assert "run_backgrounded" in types
    bg = [e for e in events if e["type"] == "background_task"]
    assert [e["status"] for e in bg] == ["started", "completed"]
    assert bg[0]["task_id"] == run_id and bg[0]["command"] == "slow job"
    after = types[types.index("run_backgrounded") :]
    assert "text" in after  # the result is delivered to the session
    assert "thinking" not in after


async def test_input_errors(app: Any, client: httpx.AsyncClient) -> None:
    sid = await new_session(client)
    r = await client.post("/chat/message", json={"message": "x", "session_id": sid})
    assert r.status_code == 503 and r.json()["code"] == "not_configured"
    install_model(app, scripted("ok"))
    r = await client.post("/chat/message", json={"message": "x" * 100_001, "session_id": sid})
    assert r.status_code == 422
    r = await client.post("/chat/message", json={"message": "x", "session_id": "s_nope"})
    assert r.status_code == 404
    r = await client.post("/chat/message", json={"message": "/no-such-skill hi", "session_id": sid})
    assert r.status_code == 404 and "skill" in r.json()["detail"].lower()
    img = {"media_type": "image/png", "data": "iVBORw0KGgo="}
    r = await client.post(
        "/chat/message", json={"message": "see", "session_id": sid, "images": [img]}
    )
    assert r.status_code == 422 and "image" in r.json()["detail"]
    r = await client.post("/chat/message", json={"message": "x", "session_id": sid, "bogus": 1})
    assert r.status_code == 422
    await client.delete(f"/sessions/{sid}")
    r = await client.post("/chat/message", json={"message": "x", "session_id": sid})
    assert r.status_code == 409


async def test_images_go_to_vision_model(app: Any, client: httpx.AsyncClient) -> None:
    from pydantic_ai.messages import BinaryContent

    got: list[Any] = []

    def look(messages: list[Any]) -> str:
        got.extend(p for p in messages[-1].parts[-1].content if isinstance(p, BinaryContent))
        return "A pixel"

    install_model(app, scripted(look), vision=True)
    sid = await new_session(client)
    img = {"media_type": "image/png", "data": "iVBORw0KGgo="}
    r = await client.post(
        "/chat/message", json={"message": "see", "session_id": sid, "images": [img]}
    )
    assert r.status_code == 202
    await events_until(app, sid, "run_finished")
    assert got and got[0].media_type == "image/png"
    hist = (await client.get("/session/history", params={"session_id": sid})).json()["messages"]
    assert hist[0]["images"] == [img]


async def test_research_subagent_depth(app: Any, client: httpx.AsyncClient) -> None:
    install_model(app, scripted(("tool", "research", '{"question":"why"}'), "Summary done"))
    install_model(app, scripted(("tool", "current_time", "{}"), "Because."), role="research")
    sid = await new_session(client)
    await client.post("/chat/message", json={"message": "research it", "session_id": sid})
    events = await events_until(app, sid, "run_finished")
    outer = next(e for e in events if e["type"] == "tool_call" and e["name"] == "research")
    inner = [e for e in events if e.get("depth") == 1]
    assert inner, events
    inner_call = next(e for e in inner if e["type"] == "tool_call")
    assert inner_call["parent_id"] == outer["tool_id"]
    assert any(e["type"] == "text" and "Because" in e["content"] for e in inner)


async def test_provider_error_is_run_error(app: Any, client: httpx.AsyncClient) -> None:
    from pydantic_ai.exceptions import ModelAuthenticationError, ModelHTTPError
    from pydantic_ai.models.function import FunctionModel

    async def boom(messages: list[Any], info: Any) -> Any:
        raise ModelHTTPError.for_category(ModelAuthenticationError, status_code=401, model_name="m")
        yield "x"  # pragma: no cover

    install_model(app, FunctionModel(stream_function=boom))
    sid = await new_session(client)
    await client.post("/chat/message", json={"message": "hi", "session_id": sid})
    events = await events_until(app, sid, "run_error")
    err = events[-1]
    assert err["recoverable"] is False and "api key" in err["message"].lower()
    hist = (await client.get("/session/history", params={"session_id": sid})).json()["messages"]
    assert [m["role"] for m in hist] == ["user"]


async def test_cancel_mid_stream_sends_partial_text_event(
    app: Any, client: httpx.AsyncClient
) -> None:
    install_model(app, scripted(" ".join(f"w{i}" for i in range(200)), delay=0.02))
    sid = await new_session(client)
    await client.post("/chat/message", json={"message": "long", "session_id": sid})
    await until_streaming(app, sid)
    await client.post("/cancel", json={"session_id": sid})
    events = await events_until(app, sid, "run_cancelled")
    types = [e["type"] for e in events]
    assert types[-2:] == ["text", "run_cancelled"], types
    assert types.count("text") == 1
    hist = (await client.get("/session/history", params={"session_id": sid})).json()["messages"]
    assert events[-2]["content"] == hist[-1]["content"] and events[-2]["depth"] == 0
    assert events[-2]["content"].startswith("w0 w1")


def _text_then_approval() -> Any:
    """One response: text, then a call of a tool that needs approval."""
    from pydantic_ai.models.function import DeltaToolCall, FunctionModel

    async def stream(messages: list[Any], info: Any) -> Any:
        yield "Let me "
        yield "note that."
        yield {
            0: DeltaToolCall(
                name="update_directives",
                json_args='{"mode":"append","text":"x"}',
                tool_call_id="call_1",
            )
        }

    return FunctionModel(stream_function=stream)


async def test_cancel_after_complete_text_sends_no_second_text(
    app: Any, client: httpx.AsyncClient
) -> None:
    install_model(app, _text_then_approval())
    sid = await new_session(client)
    await client.post("/chat/message", json={"message": "note", "session_id": sid})
    await events_until(app, sid, "approval_needed")
    await client.post("/cancel", json={"session_id": sid})
    events = await events_until(app, sid, "run_cancelled")
    texts = [e["content"] for e in events if e["type"] == "text"]
    assert texts == ["Let me note that."]


async def test_failure_mid_stream_sends_partial_text_then_error(
    app: Any, client: httpx.AsyncClient
) -> None:
    from pydantic_ai.exceptions import ModelHTTPError
    from pydantic_ai.models.function import FunctionModel

    async def half(messages: list[Any], info: Any) -> Any:
        yield "Half "
        yield "an answer"
        raise ModelHTTPError(
            500, "m", {"message": "boom", "type": "server_error"}, headers={"x-key": "sk-secret"}
        )

    install_model(app, FunctionModel(stream_function=half))
    sid = await new_session(client)
    await client.post("/chat/message", json={"message": "hi", "session_id": sid})
    events = await events_until(app, sid, "run_error")
    assert [e["type"] for e in events][-2:] == ["text", "run_error"]
    assert events[-2]["content"] == "Half an answer"
    assert events[-1]["message"] == "The model provider answered HTTP 500 (boom). Try again later."
    hist = (await client.get("/session/history", params={"session_id": sid})).json()["messages"]
    assert hist[-1]["role"] == "assistant" and hist[-1]["content"] == "Half an answer"


async def test_background_cancel_delivers_partial_text(app: Any, client: httpx.AsyncClient) -> None:
    install_model(app, scripted(" ".join(f"w{i}" for i in range(200)), delay=0.02))
    sid = await new_session(client)
    run_id = (
        await client.post("/chat/message", json={"message": "long", "session_id": sid})
    ).json()["run_id"]
    await until_streaming(app, sid)
    await client.post("/chat/background", json={"run_id": run_id})
    await asyncio.sleep(0.1)
    await client.post("/cancel", json={"run_id": run_id})
    events = await events_until(app, sid, "run_cancelled")
    after = events[[e["type"] for e in events].index("run_backgrounded") :]
    assert [e["type"] for e in after] == [
        "run_backgrounded",
        "background_task",
        "background_task",
        "text",
        "run_cancelled",
    ]
    assert after[2]["status"] == "cancelled"
    hist = (await client.get("/session/history", params={"session_id": sid})).json()["messages"]
    assert after[3]["content"] == hist[-1]["content"] and after[3]["content"].startswith("w0 w1")


async def test_shutdown_saves_partial_text(app: Any, client: httpx.AsyncClient) -> None:
    install_model(app, scripted(" ".join(f"w{i}" for i in range(200)), delay=0.02))
    sid = await new_session(client)
    run_id = (
        await client.post("/chat/message", json={"message": "long", "session_id": sid})
    ).json()["run_id"]
    await until_streaming(app, sid)
    await app.state.container.drain()
    events = await events_until(app, sid, "run_error")
    assert [e["type"] for e in events][-2:] == ["text", "run_error"]
    assert events[-1]["recoverable"] is False and events[-1]["run_id"] == run_id
    hist = (await client.get("/session/history", params={"session_id": sid})).json()["messages"]
    assert hist[-1]["content"] == events[-2]["content"] and hist[-1]["content"].startswith("w0")
    run = await app.state.container.chat.runs.get(run_id)
    assert run.status == "interrupted"


async def test_bad_key_names_the_provider(app: Any, client: httpx.AsyncClient) -> None:
    import dataclasses

    from pydantic_ai.exceptions import ModelAuthenticationError, ModelHTTPError
    from pydantic_ai.models.function import FunctionModel
    from tests.support.chat_models import resolved

    async def refuse(messages: list[Any], info: Any) -> Any:
        raise ModelHTTPError.for_category(ModelAuthenticationError, status_code=401, model_name="m")
        yield "x"  # pragma: no cover

    model = resolved(FunctionModel(stream_function=refuse), model_id="my-local")
    for provider, needle in [
        ("custom", "DELETE /models/custom/my-local, then POST /models/custom"),
        ("openai", "POST /providers/openai/connect"),
    ]:
        install_model(app, dataclasses.replace(model, provider=provider))
        sid = await new_session(client)
        await client.post("/chat/message", json={"message": "hi", "session_id": sid})
        err = (await events_until(app, sid, "run_error"))[-1]
        assert needle in err["message"] and "{id}" not in err["message"]
        assert err["recoverable"] is False


async def test_two_subagents_at_once_are_told_apart(app: Any, client: httpx.AsyncClient) -> None:
    """Every event of a sub-agent (text, text_delta, reasoning, tool_call,
    tool_result) carries the parent_id of the research call that started it."""
    from pydantic_ai.messages import ModelMessage
    from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

    main_turns = {"n": 0}

    async def main(messages: list[ModelMessage], info: AgentInfo) -> Any:
        main_turns["n"] += 1
        if main_turns["n"] == 1:
            yield {
                0: DeltaToolCall(
                    name="research", json_args='{"question": "alpha"}', tool_call_id="call_a"
                ),
                1: DeltaToolCall(
                    name="research", json_args='{"question": "beta"}', tool_call_id="call_b"
                ),
            }
            return
        yield "Both done."

    async def research(messages: list[ModelMessage], info: AgentInfo) -> Any:
        asked = str(messages[0].parts[-1].content)  # type: ignore[union-attr]
        if not any(getattr(p, "tool_name", None) for m in messages for p in m.parts):
            yield {0: DeltaToolCall(name="current_time", json_args="{}", tool_call_id=asked[-5:])}
            return
        yield f"Answer about {asked[-5:]}"

    install_model(app, FunctionModel(stream_function=main))
    install_model(app, FunctionModel(stream_function=research), role="research")
    sid = await new_session(client)
    hub = app.state.container.events
    sub = hub.subscribe(sid)
    await client.post("/chat/message", json={"message": "two at once", "session_id": sid})
    events = await events_until(app, sid, "run_finished")
    live = []
    while not sub.queue.empty():
        live.append(sub.queue.get_nowait().data)
    hub.unsubscribe(sid, sub)
    inner = [e for e in events + live if e.get("depth") == 1]
    assert {e["type"] for e in inner} >= {"tool_call", "tool_result", "text"}
    assert all(e["parent_id"] in ("call_a", "call_b") for e in inner), inner
    for e in inner:
        if e["type"] == "text":
            assert e["content"].strip().endswith("alpha" if e["parent_id"] == "call_a" else "beta")
