"""End to end chat: a real ``famulus serve`` process, a scripted OpenAI-compatible
server and a scripted Anthropic server on loopback, driven over HTTP and SSE."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.support.live import ServerProcess
from tests.support.scripted_anthropic import ScriptedAnthropic
from tests.support.scripted_openai import ScriptedOpenAI, Turn
from tests.support.sse_collector import SSECollector

KEY = "e2e-chat-key-abcdefghijklmnopqrstuvwxyz0123"
AUTH = {"Authorization": f"Bearer {KEY}"}
MODEL = "scripted-model"


@pytest.fixture(scope="module")
def openai_server() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI([MODEL]) as server:
        yield server  # type: ignore[misc]


@pytest.fixture(scope="module")
def anthropic_server() -> Iterator[ScriptedAnthropic]:
    with ScriptedAnthropic(["claude-scripted"]) as server:
        yield server  # type: ignore[misc]


@pytest.fixture(scope="module")
def famulus(
    tmp_path_factory: pytest.TempPathFactory,
    anthropic_server: ScriptedAnthropic,
    openai_server: ScriptedOpenAI,
) -> Iterator[ServerProcess]:
    home = tmp_path_factory.mktemp("chat-e2e") / "home"
    env = {
        "FAMULUS_API_KEY": KEY,
        "FAMULUS_ANTHROPIC_BASE_URL": anthropic_server.root_url,
        "FAMULUS_LOG_LEVEL": "warning",
    }
    server = ServerProcess(home, env=env).start()
    with httpx.Client(base_url=server.base_url, headers=AUTH, timeout=10) as http:
        register_scripted(http, openai_server)
    yield server
    server.stop()


def register_scripted(http: httpx.Client, openai_server: ScriptedOpenAI) -> None:
    """The scripted OpenAI-compatible server as a custom model, made the chat model."""
    r = http.post(
        "/models/custom",
        json={
            "model_id": MODEL,
            "base_url": openai_server.base_url,
            "context_window": 8000,
            "max_output_tokens": 500,
        },
    )
    assert r.status_code == 201, r.text
    use_openai(http)


def use_openai(http: httpx.Client) -> None:
    r = http.patch("/config", json={"chat_model": MODEL, "research_model": MODEL})
    assert r.status_code == 200, r.text


@pytest.fixture
def http(famulus: ServerProcess, openai_server: ScriptedOpenAI) -> Iterator[httpx.Client]:
    openai_server.reset()
    with httpx.Client(base_url=famulus.base_url, headers=AUTH, timeout=10) as client:
        yield client


def new_session(http: httpx.Client) -> str:
    return str(http.post("/sessions", json={"name": "e2e"}).json()["session_id"])


def send(http: httpx.Client, sid: str, text: str, **extra: object) -> dict[str, object]:
    r = http.post("/chat/message", json={"message": text, "session_id": sid, **extra})
    assert r.status_code == 202, r.text
    return dict(r.json())


def test_plain_answer(
    famulus: ServerProcess, http: httpx.Client, openai_server: ScriptedOpenAI
) -> None:
    openai_server.push(Turn(text="Plain answer here."))
    sid = new_session(http)
    with SSECollector(famulus.base_url, AUTH, sid) as sse:
        run = send(http, sid, "hello")
        done = sse.wait_for("run_finished")
    assert done.data["run_id"] == run["run_id"]
    assert (
        done.data["usage"]["prompt_tokens"] == 12 and done.data["usage"]["completion_tokens"] == 3
    )
    assert "text_delta" not in sse.types()
    assert sse.of("text")[0]["content"] == "Plain answer here."
    assert all(e.id is not None for e in sse.events)
    hist = http.get("/session/history", params={"session_id": sid}).json()["messages"]
    assert [(m["role"], m["content"]) for m in hist] == [
        ("user", "hello"),
        ("assistant", "Plain answer here."),
    ]


def test_streamed_answer(
    famulus: ServerProcess, http: httpx.Client, openai_server: ScriptedOpenAI
) -> None:
    openai_server.push(Turn(text="one two three four", chunk_delay=0.01))
    sid = new_session(http)
    with SSECollector(famulus.base_url, AUTH, sid, stream=True) as sse:
        send(http, sid, "count")
        sse.wait_for("run_finished")
    deltas = [e for e in sse.events if e.event == "text_delta"]
    assert len(deltas) >= 4 and all(e.id is None for e in deltas)
    assert "".join(e.data["content"] for e in deltas) == "one two three four"
    types = sse.types()
    assert types.index("text") > max(i for i, t in enumerate(types) if t == "text_delta")


def test_tool_call(
    famulus: ServerProcess, http: httpx.Client, openai_server: ScriptedOpenAI
) -> None:
    openai_server.push(Turn(tool_calls=[("current_time", {})]), Turn(text="It is now."))
    sid = new_session(http)
    with SSECollector(famulus.base_url, AUTH, sid) as sse:
        send(http, sid, "what time is it")
        sse.wait_for("run_finished")
    call, result = sse.of("tool_call")[0], sse.of("tool_result")[0]
    assert (
        call["name"] == "current_time"
        and result["tool_id"] == call["tool_id"]
        and not result["error"]
    )
    second = openai_server.requests[1]["messages"]
    assert second[-1]["role"] == "tool" and second[-1]["tool_call_id"] == call["tool_id"]


@pytest.mark.parametrize("approved", [True, False])
def test_approval(
    famulus: ServerProcess, http: httpx.Client, openai_server: ScriptedOpenAI, approved: bool
) -> None:
    text = f"Rule {approved}."
    openai_server.push(
        Turn(tool_calls=[("update_directives", {"mode": "append", "text": text})]),
        Turn(text="Done."),
    )
    before = http.get("/directives").json()["content"]
    sid = new_session(http)
    with SSECollector(famulus.base_url, AUTH, sid) as sse:
        run = send(http, sid, "add a rule")
        need = sse.wait_for("approval_needed").data
        assert need["name"] == "update_directives" and need["args"]["text"] == text
        r = http.post(
            "/tools/result",
            json={"run_id": run["run_id"], "tool_id": need["tool_id"], "approved": approved},
        )
        assert r.status_code == 200
        sse.wait_for("run_finished")
    after = http.get("/directives").json()["content"]
    assert (text in after) is approved and (after == before) is (not approved)


def test_cancel_mid_stream(
    famulus: ServerProcess, http: httpx.Client, openai_server: ScriptedOpenAI
) -> None:
    openai_server.push(Turn(text=" ".join(f"w{i}" for i in range(400)), chunk_delay=0.02))
    sid = new_session(http)
    with SSECollector(famulus.base_url, AUTH, sid, stream=True) as sse:
        run = send(http, sid, "go on and on")
        sse.wait_for("text_delta", count=5)
        t0 = time.monotonic()
        r = http.post("/cancel", json={"run_id": run["run_id"]})
        sse.wait_for("run_cancelled")
        elapsed = time.monotonic() - t0
    assert r.json() == {"status": "cancelled", "run_id": run["run_id"]}
    assert elapsed <= 1.0, elapsed
    hist = http.get("/session/history", params={"session_id": sid}).json()["messages"]
    assert hist[-1]["role"] == "assistant" and hist[-1]["content"].startswith("w0 w1 w2")
    # the streamed deltas are followed by their `text` event, then run_cancelled
    types = sse.types()
    assert types[-2:] == ["text", "run_cancelled"], types
    assert sse.of("text") and sse.of("text")[0]["content"] == hist[-1]["content"]
    streamed = "".join(e.data["content"] for e in sse.events if e.event == "text_delta")
    assert streamed == hist[-1]["content"]


def test_background(
    famulus: ServerProcess, http: httpx.Client, openai_server: ScriptedOpenAI
) -> None:
    openai_server.push(Turn(text="Background report ready.", delay=0.5))
    sid = new_session(http)
    with SSECollector(famulus.base_url, AUTH, sid) as sse:
        run = send(http, sid, "long job")
        sse.wait_for("run_started")
        r = http.post("/chat/background", json={"run_id": run["run_id"]})
        assert r.json() == {"status": "backgrounded", "run_id": run["run_id"]}
        sse.wait_for("run_finished")
    statuses = [e["status"] for e in sse.of("background_task")]
    assert statuses == ["started", "completed"]
    assert sse.of("text")[-1]["content"] == "Background report ready."


def test_queued_message(
    famulus: ServerProcess, http: httpx.Client, openai_server: ScriptedOpenAI
) -> None:
    openai_server.push(
        Turn(tool_calls=[("current_time", {})], delay=0.4), Turn(text="Both handled.")
    )
    sid = new_session(http)
    with SSECollector(famulus.base_url, AUTH, sid) as sse:
        first = send(http, sid, "first")
        sse.wait_for("run_started")
        second = send(http, sid, "second", client_id="client-2")
        assert second == {"run_id": first["run_id"], "session_id": sid, "queued": True}
        ing = sse.wait_for("message_ingested").data
        sse.wait_for("run_finished")
    assert ing["client_id"] == "client-2" and ing["run_id"] == first["run_id"]
    users = [m["content"] for m in openai_server.requests[-1]["messages"] if m["role"] == "user"]
    assert any("second" in str(u) for u in users)


def test_compaction(
    famulus: ServerProcess, http: httpx.Client, openai_server: ScriptedOpenAI
) -> None:
    sid = new_session(http)
    for i in range(3):
        openai_server.push(Turn(text=f"answer {i} " + "x" * 300, prompt_tokens=250 * (i + 1)))
        with SSECollector(famulus.base_url, AUTH, sid) as sse:
            run = send(http, sid, f"question {i} " + "y" * 300)
            sse.wait_for("run_finished", run_id=str(run["run_id"]))
    before = http.get("/context", params={"session_id": sid}).json()
    assert before["message_count"] == 6 and before["limit"] == 8000 and before["model"] == MODEL
    openai_server.push(Turn(text="They asked three questions."))
    with SSECollector(famulus.base_url, AUTH, sid) as sse:
        r = http.post("/compact", json={"session_id": sid}).json()
        sse.wait_for("compacted")
    assert r["status"] == "compacted" and r["after_tokens"] < r["before_tokens"]
    after = http.get("/context", params={"session_id": sid}).json()
    assert after["message_count"] == 4
    assert len(http.get("/session/history", params={"session_id": sid}).json()["messages"]) == 6


def test_provider_error(
    famulus: ServerProcess, http: httpx.Client, openai_server: ScriptedOpenAI
) -> None:
    openai_server.push(
        Turn(
            status=400,
            error="This model's maximum context length is 8000 tokens",
            error_code="context_length_exceeded",
        )
    )
    sid = new_session(http)
    with SSECollector(famulus.base_url, AUTH, sid) as sse:
        send(http, sid, "too long")
        err = sse.wait_for("run_error").data
    assert err["message"] and isinstance(err["recoverable"], bool)
    assert "context" in err["message"].lower()


def test_rate_limit_retried(
    famulus: ServerProcess, http: httpx.Client, openai_server: ScriptedOpenAI
) -> None:
    slow = Turn(
        status=429,
        error="Rate limit reached",
        error_code="rate_limit_exceeded",
        headers={"retry-after": "0"},
    )
    openai_server.push(slow, Turn(text="After retry."))
    sid = new_session(http)
    with SSECollector(famulus.base_url, AUTH, sid) as sse:
        send(http, sid, "hi")
        sse.wait_for("run_finished", timeout=20)
    assert sse.of("text")[-1]["content"] == "After retry."


def test_anthropic_protocol(
    famulus: ServerProcess, http: httpx.Client, anthropic_server: ScriptedAnthropic
) -> None:
    r = http.post(
        "/providers/anthropic/connect",
        json={"api_key": "sk-ant-test", "chat_model": "claude-scripted"},
    )
    assert r.status_code == 200, r.text
    try:
        anthropic_server.push(Turn(tool_calls=[("current_time", {})]), Turn(text="Claude says hi."))
        sid = new_session(http)
        with SSECollector(famulus.base_url, AUTH, sid, stream=True) as sse:
            send(http, sid, "hi claude")
            sse.wait_for("run_finished")
        assert sse.of("tool_call")[0]["name"] == "current_time"
        assert sse.of("text")[-1]["content"] == "Claude says hi."
        assert anthropic_server.requests[0]["model"] == "claude-scripted"
    finally:
        use_openai(http)


def test_history_survives_kill_mid_run(tmp_path: Path, openai_server: ScriptedOpenAI) -> None:
    openai_server.reset()
    server = ServerProcess(
        tmp_path / "home", env={"FAMULUS_API_KEY": KEY, "FAMULUS_LOG_LEVEL": "warning"}
    ).start()
    try:
        with httpx.Client(base_url=server.base_url, headers=AUTH, timeout=10) as http:
            register_scripted(http, openai_server)
            openai_server.push(
                Turn(tool_calls=[("current_time", {})]),
                Turn(text=" ".join(["never"] * 500), chunk_delay=0.02),
            )
            sid = new_session(http)
            with SSECollector(server.base_url, AUTH, sid, stream=True) as sse:
                run = send(http, sid, "survive this")
                sse.wait_for("text_delta", count=3)
            server.stop(kill=True)
        server.start()
        with httpx.Client(base_url=server.base_url, headers=AUTH, timeout=10) as http:
            hist = http.get("/session/history", params={"session_id": sid}).json()["messages"]
            assert [m["role"] for m in hist] == ["user", "assistant", "tool"]
            assert hist[0]["content"] == "survive this"
            with SSECollector(server.base_url, AUTH, sid) as sse:
                err = sse.wait_for("run_error").data
            assert err["run_id"] == run["run_id"] and err["recoverable"] is False
            openai_server.push(Turn(text="Back again."))
            with SSECollector(server.base_url, AUTH, sid) as sse:
                again = send(http, sid, "still there?")
                sse.wait_for("run_finished", run_id=str(again["run_id"]))
            assert sse.of("text")[-1]["content"] == "Back again."
    finally:
        server.stop()


def test_shutdown_mid_stream_keeps_partial_text(
    tmp_path: Path, openai_server: ScriptedOpenAI
) -> None:
    """SIGTERM mid-answer: the streamed text is kept in history and sent as a `text`
    event before the run's `run_error`, and stopping does not hang."""
    openai_server.reset()
    server = ServerProcess(
        tmp_path / "home", env={"FAMULUS_API_KEY": KEY, "FAMULUS_LOG_LEVEL": "warning"}
    ).start()
    try:
        with httpx.Client(base_url=server.base_url, headers=AUTH, timeout=10) as http:
            register_scripted(http, openai_server)
            openai_server.push(Turn(text=" ".join(f"w{i}" for i in range(500)), chunk_delay=0.02))
            sid = new_session(http)
            with SSECollector(server.base_url, AUTH, sid, stream=True) as sse:
                run = send(http, sid, "talk until stopped")
                sse.wait_for("text_delta", count=3)
                t0 = time.monotonic()
                server.stop()
                stopped_in = time.monotonic() - t0
            live_texts = [e["content"] for e in sse.of("text")]
        assert stopped_in < 8, stopped_in
        server.start()
        with httpx.Client(base_url=server.base_url, headers=AUTH, timeout=10) as http:
            hist = http.get("/session/history", params={"session_id": sid}).json()["messages"]
            assert [m["role"] for m in hist] == ["user", "assistant"], hist
            partial = hist[1]["content"]
            assert partial.startswith("w0 w1 w2 ")
            # Saved when shutdown began, not after uvicorn's 3 s wait for open streams
            # (a supervisor that kills after a short grace would lose it): 100 words
            # take 2 s to stream.
            assert len(partial.split()) < 100, partial
            with SSECollector(server.base_url, AUTH, sid) as sse:
                err = sse.wait_for("run_error").data
            assert err["run_id"] == run["run_id"] and err["recoverable"] is False
            texts = sse.of("text")
            assert [t["content"] for t in texts] == [partial] and texts[0]["depth"] == 0
            assert live_texts == [partial]  # sent before the server went away
            types = sse.types()
            assert types.index("text") < types.index("run_error")
            assert types.count("run_error") == 1
    finally:
        server.stop()
