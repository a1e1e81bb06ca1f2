"""The OpenAI-compatible API in process: shapes, errors, sessions, approvals, CORS.

The official ``openai`` package drives a real server in
``tests/e2e/test_openai_compat_e2e.py``; here the rules are checked one by one
with scripted pydantic-ai models.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import ValidationError
from tests.conftest import API_KEY
from tests.support.chat_models import events_until, install_model, scripted

from famulus.app import create_app
from famulus.channels.openai_compat.service import APPROVAL_REFUSAL, Transcript
from famulus.channels.openai_compat.sessions import client_name, went_back
from famulus.events import Event
from famulus.settings import Settings
from famulus.settings_errors import settings_errors

UA = {"User-Agent": "OpenAI/Python 1.54.0"}


def ask(text: str, **extra: Any) -> dict[str, Any]:
    return {"model": "famulus", "messages": [{"role": "user", "content": text}], **extra}


async def complete(
    client: httpx.AsyncClient, body: dict[str, Any], **headers: str
) -> httpx.Response:
    return await client.post("/v1/chat/completions", json=body, headers={**UA, **headers})


def sse_data(text: str) -> list[Any]:
    return [
        line[len("data: ") :] if line == "data: [DONE]" else json.loads(line[len("data: ") :])
        for line in text.splitlines()
        if line.startswith("data: ")
    ]


# -- models and errors ---------------------------------------------------------


async def test_models_list_and_retrieve(client: httpx.AsyncClient) -> None:
    r = await client.get("/v1/models")
    assert r.status_code == 200
    body = r.json()
    assert body["object"] == "list" and [m["id"] for m in body["data"]] == ["famulus"]
    assert body["data"][0]["object"] == "model" and body["data"][0]["created"] > 0
    assert (await client.get("/v1/models/famulus")).json()["id"] == "famulus"
    missing = await client.get("/v1/models/gpt-4o")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "model_not_found"


async def test_errors_have_openai_shape(client: httpx.AsyncClient, anon: httpx.AsyncClient) -> None:
    r = await anon.post("/v1/chat/completions", json=ask("hi"))
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    assert r.json()["error"]["type"] == "authentication_error"
    assert r.json()["error"]["code"] == "invalid_api_key"
    wrong = await anon.get("/v1/models", headers={"Authorization": "Bearer wrong"})
    assert wrong.status_code == 401 and set(wrong.json()["error"]) == {
        "message",
        "type",
        "param",
        "code",
    }
    bad = await complete(client, {"model": "famulus"})  # no messages: OpenAI says 400
    assert bad.status_code == 400
    assert bad.json()["error"] | {"message": ""} == {
        "message": "",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "invalid_request",
    }
    assert (await client.post("/v1/embeddings", json={})).json()["error"]["type"] == (
        "invalid_request_error"
    )
    # Everything else keeps famulus's own shape.
    assert set((await anon.get("/sessions")).json()) == {"detail", "code"}


async def test_bad_messages_are_400_naming_the_field(client: httpx.AsyncClient) -> None:
    install_model(client._transport.app, scripted("never"))  # type: ignore[attr-defined]
    cases = [
        (
            {"model": "famulus", "messages": [{"role": "assistant", "content": "hi"}]},
            "messages.0.role",
        ),
        (
            {"model": "famulus", "messages": [{"role": "user", "content": " "}]},
            "messages.0.content",
        ),
        (
            {
                "model": "famulus",
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {"type": "image_url", "image_url": {"url": "https://x.test/a.png"}}
                        ],
                    }
                ],
            },
            "messages.0.content.0",
        ),
        (
            {
                "model": "famulus",
                "messages": [{"role": "user", "content": [{"type": "input_audio"}]}],
            },
            "messages.0.content.0",
        ),
        (ask("hi", n=2), "n"),
    ]
    for body, param in cases:
        r = await complete(client, body)
        assert r.status_code == 400, (body, r.text)
        assert r.json()["error"]["param"] == param, r.text
    r = await complete(client, ask("hi", model="gpt-4o"))
    assert r.status_code == 404 and r.json()["error"]["code"] == "model_not_found"
    r = await complete(client, ask("hi"), **{"X-Famulus-Approve": "yes"})
    assert r.status_code == 400
    # A lone surrogate is no text (it was a 500, with the run half started).
    for content in ("hi \ud800", [{"type": "text", "text": "\udc00"}]):
        body = {"model": "famulus", "messages": [{"role": "user", "content": content}]}
        raw = json.dumps(body)  # escaped, as a browser's JSON.stringify sends it
        r = await client.post(
            "/v1/chat/completions", content=raw, headers={"Content-Type": "application/json"}
        )
        assert r.status_code == 400, r.text
        assert "surrogate" in r.json()["error"]["message"]
        assert r.json()["error"]["type"] == "invalid_request_error"
    # Nothing was started by any of them.
    assert (await client.get("/sessions")).json()["sessions"] == []


async def test_no_chat_model_is_503(client: httpx.AsyncClient) -> None:
    r = await complete(client, ask("hi"))
    assert r.status_code == 503
    assert r.json()["error"] | {"message": ""} == {
        "message": "",
        "type": "server_error",
        "param": None,
        "code": "not_configured",
    }


# -- answers -------------------------------------------------------------------


async def test_non_streamed_answer(app: Any, client: httpx.AsyncClient) -> None:
    install_model(app, scripted("Hello there"))
    r = await complete(
        client,
        {
            "model": "famulus",
            "messages": [
                {"role": "system", "content": "You are a pirate."},
                {"role": "user", "content": "older question"},
                {"role": "assistant", "content": "older answer"},
                {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            ],
            "temperature": 0.2,  # accepted and ignored
        },
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["id"].startswith("chatcmpl-") and body["object"] == "chat.completion"
    assert body["model"] == "famulus" and body["created"] > 0
    choice = body["choices"][0]
    assert choice["message"] == {"role": "assistant", "content": "Hello there "}
    assert choice["finish_reason"] == "stop" and choice["index"] == 0
    usage = body["usage"]
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    sid = r.headers["x-famulus-session"]
    assert r.headers["x-famulus-run"].startswith("r_")
    hist = (await client.get("/session/history", params={"session_id": sid})).json()
    # Only the last user message is new; the client's copy of the past is not read.
    assert [(m["role"], m["content"].strip()) for m in hist["messages"]] == [
        ("user", "hi"),
        ("assistant", "Hello there"),
    ]
    session = (await client.get("/session", params={"session_id": sid})).json()
    assert session["name"] == "API: OpenAI/Python"


async def test_streamed_answer_with_usage(app: Any, client: httpx.AsyncClient) -> None:
    install_model(app, scripted(("tool", "current_time", "{}"), "one two three"))
    r = await complete(client, ask("count", stream=True, stream_options={"include_usage": True}))
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    assert r.headers["x-famulus-session"].startswith("s_")
    frames = sse_data(r.text)
    assert frames[-1] == "[DONE]"
    chunks = frames[:-1]
    assert {c["id"] for c in chunks} == {chunks[0]["id"]} and chunks[0]["id"].startswith(
        "chatcmpl-"
    )
    assert all(c["object"] == "chat.completion.chunk" and c["model"] == "famulus" for c in chunks)
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    text = "".join(c["choices"][0]["delta"]["content"] or "" for c in chunks if c["choices"])
    assert text == "one two three "
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] > 0


async def test_stream_without_usage_and_failed_run(app: Any, client: httpx.AsyncClient) -> None:
    install_model(app, scripted("fine"))
    frames = sse_data((await complete(client, ask("a", stream=True))).text)
    assert all(f == "[DONE]" or f["choices"] for f in frames)

    def boom(messages: Any) -> str:
        raise RuntimeError("model exploded")

    install_model(app, scripted(boom))
    r = await complete(client, ask("b", stream=True))
    frames = sse_data(r.text)
    assert frames[-1] == "[DONE]" and frames[-2]["error"]["type"] == "server_error"
    r = await complete(client, ask("c"))
    assert r.status_code == 502 and r.json()["error"]["code"] == "upstream_error"


async def test_stream_pings_while_the_agent_is_quiet(tmp_path: Path) -> None:
    settings = Settings(
        home=tmp_path / "home",
        api_key=API_KEY,  # type: ignore[arg-type]
        sse_ping_interval_s=0.05,
    )
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        install_model(app, scripted("slow words", delay=0.3))
        transport = httpx.ASGITransport(app=app)
        auth = {"Authorization": f"Bearer {API_KEY}"}
        async with httpx.AsyncClient(transport=transport, base_url="http://t", headers=auth) as c:
            r = await complete(c, ask("hi", stream=True))
    assert ": ping" in r.text.splitlines()
    text = "".join(
        f["choices"][0]["delta"]["content"] or "" for f in sse_data(r.text)[:-1] if f["choices"]
    )
    assert text == "slow words "


def test_transcript_pieces_add_up_to_the_blocks() -> None:
    """Streamed blocks, a block sent whole, a sub-agent's text and a cancel's
    kept text: the pieces are the depth-0 blocks joined by a blank line."""
    events = [
        ("text_delta", "Let me ", 0),
        ("text_delta", "check.", 0),
        ("text", "Let me check.", 0),
        ("text_delta", "sub-agent words", 1),
        ("text", "sub-agent words", 1),
        ("text", "A block sent whole.", 0),
        ("text_delta", "Partly", 0),
        ("text", "Partly said before the cancel", 0),
        ("text", "", 0),
    ]
    transcript = Transcript()
    pieces = [
        piece
        for kind, content, depth in events
        for piece in transcript.take(Event(kind, {"content": content, "depth": depth}, None))
    ]
    assert "".join(pieces) == (
        "Let me check.\n\nA block sent whole.\n\nPartly said before the cancel"
    )
    assert pieces[:2] == ["Let me ", "check."]


# -- sessions ------------------------------------------------------------------


async def test_session_rule(app: Any, client: httpx.AsyncClient) -> None:
    install_model(app, scripted("ok"))

    async def session_of(body: dict[str, Any], **headers: str) -> str:
        r = await complete(client, body, **headers)
        assert r.status_code == 200, r.text
        return str(r.headers["x-famulus-session"])

    alice = await session_of(ask("1", user="alice"))
    assert await session_of(ask("2", user="alice")) == alice
    assert await session_of(ask("3", user="bob")) != alice
    client_a = await session_of(ask("4"))
    # Another version of the same client is the same client.
    assert await session_of(ask("5"), **{"User-Agent": "OpenAI/Python 2.0.1"}) == client_a
    # A blank `user` names nobody: no session "API:  " for it.
    assert await session_of(ask("5b", user="  \n")) == client_a
    assert await session_of(ask("6"), **{"User-Agent": "curl/8.5.0"}) != client_a
    # The header wins over `user`.
    assert await session_of(ask("7", user="bob"), **{"X-Famulus-Session": alice}) == alice
    # One session per Open WebUI chat, named after its first message; it wins over `user`.
    chat = {"X-OpenWebUI-Chat-Id": "3f2a9c1e-0000-4000-8000-000000000001"}
    first = await session_of(ask("Plan my trip\nto Rome", user="alice"), **chat)
    assert first not in (alice, client_a)
    assert await session_of(ask("and the hotel?"), **chat) == first
    other = {"X-OpenWebUI-Chat-Id": "3f2a9c1e-0000-4000-8000-000000000002"}
    assert await session_of(ask("x" * 80), **other) != first
    names = {s["name"] for s in (await client.get("/sessions")).json()["sessions"]}
    assert {"API: alice", "API: bob", "API: OpenAI/Python", "API: curl"} <= names
    assert {"Open WebUI: Plan my trip", "Open WebUI: " + "x" * 59 + "…"} <= names
    # An archived mapped session is replaced; an archived named one is a 409.
    assert (await client.delete(f"/sessions/{alice}")).status_code == 200
    assert await session_of(ask("8", user="alice")) != alice
    r = await complete(client, ask("9"), **{"X-Famulus-Session": alice})
    assert r.status_code == 409 and r.json()["error"]["type"] == "invalid_request_error"
    r = await complete(client, ask("9"), **{"X-Famulus-Session": "s_nope"})
    assert r.status_code == 404


def test_client_name_drops_versions_and_comments() -> None:
    assert client_name("OpenAI/Python 1.54.0") == "OpenAI/Python"
    assert client_name("Python/3.11 aiohttp/3.9.5") == "Python aiohttp"
    assert (
        client_name("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML) Chrome/120.0")
        == "Mozilla AppleWebKit Chrome"
    )
    assert client_name("") == client_name(None) == "unknown client"


def test_went_back_finds_regenerate_and_edit_only() -> None:
    kept = ["a", "b", "c"]
    assert went_back(["a", "b", "c", "d"], kept) == 0  # goes on from the end
    assert went_back(["a", "b", "c"], kept) == 1  # regenerate the last answer
    assert went_back(["a", "b", "x"], kept) == 1  # edit the last message
    assert went_back(["a", "x"], kept) == 2  # edit an earlier one
    assert went_back(["a"], kept) == 3  # regenerate the first answer
    assert went_back(["title please"], kept) == 0  # one unrelated message
    assert went_back(["z", "b"], kept) == 0  # a conversation that does not match
    assert went_back(["a"], []) == went_back([], kept) == 0


async def test_open_webui_chat_follows_regenerate_and_edit(
    app: Any, client: httpx.AsyncClient
) -> None:
    install_model(app, scripted(lambda messages: f"answer {len(messages)}"))
    chat = {"X-OpenWebUI-Chat-Id": "c-1"}

    def convo(*users: str) -> dict[str, Any]:
        messages: list[dict[str, str]] = []
        for text in users:
            messages += [{"role": "user", "content": text}, {"role": "assistant", "content": "…"}]
        return {"model": "famulus", "messages": messages[:-1]}

    async def history(sid: str) -> list[str]:
        r = await client.get("/session/history", params={"session_id": sid})
        return [m["content"] for m in r.json()["messages"] if m["role"] == "user"]

    sid = (await complete(client, convo("one"), **chat)).headers["x-famulus-session"]
    await complete(client, convo("one", "two"), **chat)
    assert await history(sid) == ["one", "two"]
    r = await complete(client, convo("one", "two"), **chat)  # regenerate
    assert r.headers["x-famulus-session"] == sid
    assert await history(sid) == ["one", "two"]
    await complete(client, convo("one", "TWO"), **chat)  # edit the last message
    assert await history(sid) == ["one", "TWO"]
    # A turn from elsewhere (the web client) is never reverted.
    seen = max(e["_seq"] for e in await events_until(app, sid, "run_finished"))
    r = await client.post("/chat/message", json={"message": "from the web", "session_id": sid})
    assert r.status_code == 202, r.text
    await events_until(app, sid, "run_finished", after=seen)
    await complete(client, convo("one", "again"), **chat)
    assert await history(sid) == ["one", "TWO", "from the web", "again"]


async def test_images_from_data_urls(app: Any, client: httpx.AsyncClient) -> None:
    install_model(app, scripted("I see it"), vision=True)
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
    content = [
        {"type": "text", "text": "what is this"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}},
    ]
    r = await complete(
        client, {"model": "famulus", "messages": [{"role": "user", "content": content}]}
    )
    assert r.status_code == 200, r.text
    sid = r.headers["x-famulus-session"]
    first = (await client.get("/session/history", params={"session_id": sid})).json()["messages"][0]
    assert first["content"] == "what is this" and len(first["images"]) == 1


# -- approvals -----------------------------------------------------------------


async def test_approval_refused_by_default_and_allowed_by_header(
    app: Any, client: httpx.AsyncClient
) -> None:
    tool = ("tool", "update_directives", '{"mode":"append","text":"Be brief."}')
    install_model(app, scripted(tool, "I could not"))
    r = await complete(client, ask("remember to be brief", user="approvals"))
    assert r.status_code == 200, r.text
    sid = r.headers["x-famulus-session"]
    events = await events_until(app, sid, "run_finished")
    types = [e["type"] for e in events]
    assert "approval_needed" not in types  # nobody is asked
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["result"] == APPROVAL_REFUSAL
    assert "Be brief." not in (await client.get("/directives")).json()["content"]
    learned = (await client.get("/memory/learning/events")).json()
    assert not [e for e in learned.get("events", []) if e["kind"] == "approval_denied"]

    install_model(app, scripted(tool, "Done"))
    r = await complete(client, ask("again", user="approvals"), **{"X-Famulus-Approve": "all"})
    assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"] == "Done "
    assert "Be brief." in (await client.get("/directives")).json()["content"]


# -- CORS ----------------------------------------------------------------------


async def _cors_app(tmp_path: Path, origins: str) -> Any:
    return create_app(
        Settings(home=tmp_path / "home", api_key=API_KEY, cors_origins=origins)  # type: ignore[arg-type]
    )


async def _preflight(app: Any, origin: str) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://famulus.test") as c:
        return await c.options(
            "/v1/chat/completions",
            headers={
                "Origin": origin,
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization, content-type, x-famulus-session",
            },
        )


async def test_cors_is_off_by_default(app: Any, client: httpx.AsyncClient) -> None:
    r = await _preflight(app, "http://localhost:3000")
    assert "access-control-allow-origin" not in r.headers
    r = await client.get("/v1/models", headers={"Origin": "http://localhost:3000"})
    assert "access-control-allow-origin" not in r.headers


async def test_cors_allows_the_configured_origins_only(tmp_path: Path) -> None:
    app = await _cors_app(tmp_path, "http://localhost:3000, https://webui.example.org")
    ok = await _preflight(app, "http://localhost:3000")
    assert ok.status_code == 200
    assert ok.headers["access-control-allow-origin"] == "http://localhost:3000"
    assert "x-famulus-session" in ok.headers["access-control-allow-headers"].lower()
    assert "access-control-allow-credentials" not in ok.headers
    refused = await _preflight(app, "http://evil.test")
    assert refused.status_code == 400 and "access-control-allow-origin" not in refused.headers
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://famulus.test") as c:
        r = await c.get("/v1/models", headers={"Origin": "https://webui.example.org"})
    # Even the 401 carries the header, so the page can read why.
    assert r.status_code == 401
    assert r.headers["access-control-allow-origin"] == "https://webui.example.org"
    assert "x-famulus-session" in r.headers["access-control-expose-headers"].lower()


def test_a_bad_origin_is_one_settings_line() -> None:
    for bad in ("localhost:3000", "http://localhost:3000/", "http://a.test/path", "ftp://a.test"):
        with pytest.raises(ValidationError) as info:
            Settings(cors_origins=bad)
        (line,) = settings_errors(info.value, {})
        assert line.startswith("invalid setting FAMULUS_CORS_ORIGINS=") and "scheme://host" in line
    assert Settings(cors_origins="*").cors_origin_list == ["*"]
    assert Settings(cors_origins=" http://[::1]:8080 ,").cors_origin_list == ["http://[::1]:8080"]
