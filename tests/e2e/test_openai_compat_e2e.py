"""End to end: the official ``openai`` package against a real ``famulus serve``,
whose chat model is a scripted OpenAI-compatible server on loopback.

So this checks both ends of famulus speaking OpenAI: as a client of the
scripted model, and as a server to the ``openai`` package.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from tests.e2e.test_chat_e2e import register_scripted
from tests.support.live import ServerProcess
from tests.support.scripted_openai import ScriptedOpenAI, Turn
from tests.support.sse_collector import SSECollector

KEY = "e2e-openai-key-abcdefghijklmnopqrstuvwxyz0123"
AUTH = {"Authorization": f"Bearer {KEY}"}


@pytest.fixture(scope="module")
def model_server() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI(["scripted-model"]) as server:
        yield server  # type: ignore[misc]


@pytest.fixture(scope="module")
def famulus(
    tmp_path_factory: pytest.TempPathFactory, model_server: ScriptedOpenAI
) -> Iterator[ServerProcess]:
    home = tmp_path_factory.mktemp("openai-e2e") / "home"
    env = {
        "FAMULUS_API_KEY": KEY,
        "FAMULUS_LOG_LEVEL": "warning",
        "FAMULUS_MEMORY_QUIET_S": "3600",  # no extraction job asks the scripted model
    }
    server = ServerProcess(home, env=env).start()
    with httpx.Client(base_url=server.base_url, headers=AUTH, timeout=10) as http:
        register_scripted(http, model_server)
    yield server
    server.stop()


@pytest.fixture
def client(famulus: ServerProcess, model_server: ScriptedOpenAI) -> Iterator[openai.OpenAI]:
    model_server.reset()
    with openai.OpenAI(base_url=f"{famulus.base_url}/v1", api_key=KEY, timeout=30) as c:
        yield c


@pytest.fixture
def http(famulus: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=famulus.base_url, headers=AUTH, timeout=10) as c:
        yield c


def model_input(request: dict[str, Any]) -> str:
    """Everything a model request carried, as one text to search."""
    return json.dumps(request["messages"])


def test_models_list(client: openai.OpenAI) -> None:
    assert [m.id for m in client.models.list()] == ["famulus"]
    assert client.models.retrieve("famulus").owned_by == "famulus"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("gpt-4o")


def test_non_streamed_answer(client: openai.OpenAI, model_server: ScriptedOpenAI) -> None:
    model_server.push(Turn(text="Paris is the capital.", prompt_tokens=20))
    done = client.chat.completions.create(
        model="famulus",
        messages=[
            {"role": "system", "content": "ignored"},
            {"role": "user", "content": "Capital of France?"},
        ],
        user="e2e-plain",
    )
    assert done.id.startswith("chatcmpl-") and done.object == "chat.completion"
    assert done.model == "famulus"
    choice = done.choices[0]
    assert choice.message.role == "assistant" and choice.message.content == "Paris is the capital."
    assert choice.finish_reason == "stop"
    assert done.usage is not None
    assert (done.usage.prompt_tokens, done.usage.completion_tokens) == (20, 4)
    assert done.usage.total_tokens == 24
    # The client's system message is not the system prompt; famulus's own is.
    sent = model_server.requests[0]["messages"]
    assert sent[0]["role"] == "system" and "ignored" not in json.dumps(sent)


def test_streamed_answer_with_usage(client: openai.OpenAI, model_server: ScriptedOpenAI) -> None:
    model_server.push(Turn(text="one two three four five", chunk_delay=0.01))
    stream = client.chat.completions.create(
        model="famulus",
        messages=[{"role": "user", "content": "count to five"}],
        stream=True,
        stream_options={"include_usage": True},
        user="e2e-stream",
    )
    chunks = list(stream)
    deltas = [c.choices[0].delta.content or "" for c in chunks if c.choices]
    assert "".join(deltas) == "one two three four five"
    assert len([d for d in deltas if d]) >= 5  # streamed, not in one piece
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens == 5
    assert len({c.id for c in chunks}) == 1


def test_user_keeps_the_conversation(client: openai.OpenAI, model_server: ScriptedOpenAI) -> None:
    model_server.push(Turn(text="Noted, your cat is Mimi."), Turn(text="Mimi."))
    first = client.chat.completions.with_raw_response.create(
        model="famulus",
        messages=[{"role": "user", "content": "My cat is called Mimi."}],
        user="e2e-context",
    )
    # The client sends only the new question; famulus remembers the rest.
    second = client.chat.completions.with_raw_response.create(
        model="famulus",
        messages=[{"role": "user", "content": "What is my cat called?"}],
        user="e2e-context",
    )
    assert first.headers["x-famulus-session"] == second.headers["x-famulus-session"]
    assert second.parse().choices[0].message.content == "Mimi."
    later = model_input(model_server.requests[-1])
    assert "My cat is called Mimi." in later and "Noted, your cat is Mimi." in later
    assert "What is my cat called?" in later


def test_session_header_and_bad_key(
    client: openai.OpenAI, famulus: ServerProcess, http: httpx.Client, model_server: ScriptedOpenAI
) -> None:
    sid = http.post("/sessions", json={"name": "chosen"}).json()["session_id"]
    model_server.push(Turn(text="In the chosen session."))
    raw = client.chat.completions.with_raw_response.create(
        model="famulus",
        messages=[{"role": "user", "content": "where am I?"}],
        extra_headers={"X-Famulus-Session": sid},
    )
    assert raw.headers["x-famulus-session"] == sid
    history = http.get("/session/history", params={"session_id": sid}).json()["messages"]
    assert [m["content"] for m in history] == ["where am I?", "In the chosen session."]
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(
            model="famulus",
            messages=[{"role": "user", "content": "x"}],
            extra_headers={"X-Famulus-Session": "s_missing"},
        )
    wrong = openai.OpenAI(base_url=f"{famulus.base_url}/v1", api_key="wrong-key", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as info:
        wrong.models.list()
    assert info.value.code == "invalid_api_key"
    with pytest.raises(openai.BadRequestError) as bad:
        client.chat.completions.create(
            model="famulus", messages=[{"role": "assistant", "content": "hi"}]
        )
    assert bad.value.param == "messages.0.role"


def test_approval_refused_unless_opted_in(
    client: openai.OpenAI, http: httpx.Client, model_server: ScriptedOpenAI
) -> None:
    call = ("update_directives", {"mode": "append", "text": "Answer in haiku."})
    model_server.push(
        Turn(tool_calls=[call]), Turn(text="That needs your approval in the web client.")
    )
    refused = client.chat.completions.create(
        model="famulus",
        messages=[{"role": "user", "content": "Always answer in haiku."}],
        user="e2e-approvals",
    )
    assert refused.choices[0].message.content == "That needs your approval in the web client."
    told = model_input(model_server.requests[-1])  # the tool's answer the model saw
    assert "X-Famulus-Approve: all" in told and "web client" in told
    assert "haiku" not in http.get("/directives").json()["content"]

    model_server.push(Turn(tool_calls=[call]), Turn(text="Done."))
    allowed = client.chat.completions.create(
        model="famulus",
        messages=[{"role": "user", "content": "Always answer in haiku."}],
        user="e2e-approvals",
        extra_headers={"X-Famulus-Approve": "all"},
    )
    assert allowed.choices[0].message.content == "Done."
    assert "Answer in haiku." in http.get("/directives").json()["content"]


def test_directives_and_memory_reach_the_model(
    client: openai.OpenAI, http: httpx.Client, model_server: ScriptedOpenAI
) -> None:
    r = http.put("/directives", json={"content": "Call the person Captain."})
    assert r.status_code == 200, r.text
    r = http.post("/facts", json={"text": "The person's dentist is Dr. Okafor"})
    assert r.status_code == 201, r.text
    model_server.push(Turn(text="Aye, Captain."))
    client.chat.completions.create(
        model="famulus",
        messages=[{"role": "user", "content": "When do I see Dr. Okafor, my dentist?"}],
        user="e2e-directives",
    )
    system = model_server.requests[-1]["messages"][0]
    assert system["role"] == "system" and "Call the person Captain." in system["content"]
    assert "The person's dentist is Dr. Okafor" in system["content"]


def test_closing_the_stream_cancels_the_run(
    famulus: ServerProcess, http: httpx.Client, model_server: ScriptedOpenAI
) -> None:
    words = " ".join(f"w{i}" for i in range(200))
    model_server.push(Turn(text=words, chunk_delay=0.05))
    body = {
        "model": "famulus",
        "messages": [{"role": "user", "content": "talk a lot"}],
        "stream": True,
        "user": "e2e-hangup",
    }
    with http.stream("POST", "/v1/chat/completions", json=body) as r:
        sid = r.headers["x-famulus-session"]
        for line in r.iter_lines():
            if '"content":"w' in line:  # the first words are out: hang up
                break
    with SSECollector(famulus.base_url, AUTH, sid) as sse:
        done = sse.wait_for("run_cancelled", timeout=10)
    assert done.data["run_id"] == r.headers["x-famulus-run"]
    history = http.get("/session/history", params={"session_id": sid}).json()["messages"]
    kept = history[-1]["content"]
    assert history[-1]["role"] == "assistant" and kept.startswith("w0") and len(kept) < len(words)


def test_a_client_that_gives_up_cancels_the_run(
    famulus: ServerProcess, http: httpx.Client, model_server: ScriptedOpenAI
) -> None:
    model_server.push(Turn(text="too late", delay=4.0))
    impatient = openai.OpenAI(
        base_url=f"{famulus.base_url}/v1", api_key=KEY, timeout=1.0, max_retries=0
    )
    with pytest.raises(openai.APITimeoutError):
        impatient.chat.completions.create(
            model="famulus", messages=[{"role": "user", "content": "slow"}], user="e2e-timeout"
        )
    sessions = http.get("/sessions").json()["sessions"]
    sid = next(s["session_id"] for s in sessions if s["name"] == "API: e2e-timeout")
    with SSECollector(famulus.base_url, AUTH, sid) as sse:
        sse.wait_for("run_cancelled", timeout=10)
