"""famulus as an MCP server: a real ``famulus serve`` process with a scripted
model, driven by the ``mcp`` package's own Streamable HTTP client."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult
from tests.support.live import ServerProcess
from tests.support.scripted_openai import ScriptedOpenAI, Turn

KEY = "e2e-mcp-key-abcdefghijklmnopqrstuvwxyz0123456"
AUTH = {"Authorization": f"Bearer {KEY}"}
MODEL = "scripted-model"
TOOLS = {
    "recall",
    "remember",
    "list_sessions",
    "create_session",
    "session_history",
    "chat",
    "list_automations",
    "run_automation",
}


@pytest.fixture(scope="module")
def openai_server() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI([MODEL]) as server:
        yield server  # type: ignore[misc]


@pytest.fixture(scope="module")
def famulus(
    tmp_path_factory: pytest.TempPathFactory, openai_server: ScriptedOpenAI
) -> Iterator[ServerProcess]:
    home = tmp_path_factory.mktemp("mcp-e2e") / "home"
    server = ServerProcess(home, env={"FAMULUS_API_KEY": KEY, "FAMULUS_LOG_LEVEL": "warning"})
    server.start()
    with httpx.Client(base_url=server.base_url, headers=AUTH, timeout=10) as http:
        custom = {
            "model_id": MODEL,
            "base_url": openai_server.base_url,
            "context_window": 8000,
            "max_output_tokens": 500,
        }
        assert http.post("/models/custom", json=custom).status_code == 201
        assert http.patch("/config", json={"chat_model": MODEL}).status_code == 200
    yield server
    server.stop()


@pytest.fixture
async def http(
    famulus: ServerProcess, openai_server: ScriptedOpenAI
) -> AsyncIterator[httpx.AsyncClient]:
    openai_server.reset()
    async with httpx.AsyncClient(base_url=famulus.base_url, headers=AUTH, timeout=30) as client:
        yield client


@asynccontextmanager
async def mcp_session(
    base_url: str, key: str = KEY, statuses: list[int] | None = None
) -> AsyncIterator[ClientSession]:
    """An initialized MCP client session; ``statuses`` collects every HTTP status."""

    async def seen(response: httpx2.Response) -> None:
        if statuses is not None:
            statuses.append(response.status_code)

    headers = {"Authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60, event_hooks={"response": [seen]}) as client,
        streamable_http_client(f"{base_url}/mcp", http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await session.call_tool(tool, arguments)
    assert isinstance(result, CallToolResult)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return dict(result.structured_content)


async def tool_error(session: ClientSession, tool: str, **arguments: Any) -> str:
    result = await session.call_tool(tool, arguments)
    assert isinstance(result, CallToolResult) and result.is_error
    return " ".join(getattr(c, "text", "") for c in result.content)


async def test_initialize_and_list_tools(famulus: ServerProcess) -> None:
    async with mcp_session(famulus.base_url) as session:
        assert session.server_info is not None and session.server_info.name == "famulus"
        listed = (await session.list_tools()).tools
    assert {t.name for t in listed} == TOOLS
    recall = next(t for t in listed if t.name == "recall")
    assert recall.annotations is not None and recall.annotations.read_only_hint
    assert recall.input_schema["required"] == ["query"]


async def test_remember_then_recall(famulus: ServerProcess, http: httpx.AsyncClient) -> None:
    fact = "The person's sister Ines lives in Porto"
    async with mcp_session(famulus.base_url) as session:
        stored = await call(session, "remember", text=fact, kind="relationship")
        again = await call(session, "remember", text=fact)
        found = await call(session, "recall", query="Where does Ines live?", limit=3)
        blank = await tool_error(session, "recall", query="   ")
    assert stored["status"] == "remembered" and stored["text"] == fact
    assert again == {"status": "duplicate", "fact_id": stored["fact_id"], "text": fact}
    top = found["facts"][0]
    assert (top["id"], top["text"], top["kind"], top["source_type"]) == (
        stored["fact_id"],
        fact,
        "relationship",
        "mcp",
    )
    assert "blank" in blank
    listed = (await http.get("/facts", params={"source_type": "mcp"})).json()
    assert [f["text"] for f in listed["facts"]] == [fact]


async def test_chat_answers_in_the_session(
    famulus: ServerProcess, http: httpx.AsyncClient, openai_server: ScriptedOpenAI
) -> None:
    openai_server.push(Turn(text="Scripted answer over MCP."))
    async with mcp_session(famulus.base_url) as session:
        created = await call(session, "create_session", name="from my IDE")
        sid = created["session_id"]
        answer = await call(session, "chat", message="hello from MCP", session_id=sid)
        history = await call(session, "session_history", session_id=sid)
        listed = await call(session, "list_sessions")
        unknown = await tool_error(session, "chat", message="hi", session_id="s_missing")
    assert answer["session_id"] == sid and answer["status"] == "ok"
    assert answer["text"] == "Scripted answer over MCP."
    rest = (await http.get("/session/history", params={"session_id": sid})).json()["messages"]
    assert [(m["role"], m["content"]) for m in rest] == [
        ("user", "hello from MCP"),
        ("assistant", "Scripted answer over MCP."),
    ]
    assert [(m["role"], m["content"]) for m in history["messages"]] == [
        (m["role"], m["content"]) for m in rest
    ]
    assert sid in [s["session_id"] for s in listed["sessions"]]
    assert "s_missing" in unknown and "Traceback" not in unknown


async def test_chat_refuses_approvals_unless_skipped(
    famulus: ServerProcess, http: httpx.AsyncClient, openai_server: ScriptedOpenAI
) -> None:
    rule = "Rule from MCP."
    before = (await http.get("/directives")).json()["content"]
    openai_server.push(
        Turn(tool_calls=[("update_directives", {"mode": "append", "text": rule})]),
        Turn(text="I could not change the directives."),
    )
    async with mcp_session(famulus.base_url) as session:
        answer = await call(session, "chat", message="add a rule")
    assert answer["text"] == "I could not change the directives."
    assert (await http.get("/directives")).json()["content"] == before
    told = openai_server.requests[1]["messages"][-1]
    assert told["role"] == "tool" and "cannot be given over MCP" in told["content"]
    assert "person declined" not in told["content"]  # a rule refused, not the person
    learned = await http.get("/memory/learning/events", params={"kind": "approval_denied"})
    assert learned.json()["events"] == []

    openai_server.push(
        Turn(tool_calls=[("update_directives", {"mode": "append", "text": rule})]),
        Turn(text="Added."),
    )
    async with mcp_session(famulus.base_url) as session:
        answer = await call(session, "chat", message="add a rule", skip_approvals=True)
    assert answer["text"] == "Added." and rule in (await http.get("/directives")).json()["content"]


async def test_list_and_run_automations(
    famulus: ServerProcess, http: httpx.AsyncClient, openai_server: ScriptedOpenAI
) -> None:
    body = {
        "name": "Morning brief",
        "description": "Summarize my day.",
        "trigger": {"type": "time", "at": "07:00"},
    }
    r = await http.post("/automations", json=body)
    assert r.status_code == 201, r.text
    automation_id = r.json()["id"]
    openai_server.push(Turn(text="Your day is free."))
    async with mcp_session(famulus.base_url) as session:
        listed = await call(session, "list_automations")
        outcome = await call(session, "run_automation", automation_id=automation_id)
        missing = await tool_error(session, "run_automation", automation_id=999_999)
    mine = next(a for a in listed["automations"] if a["id"] == automation_id)
    assert mine["name"] == "Morning brief" and mine["running"] is False
    assert outcome["automation_id"] == automation_id and outcome["status"] == "ok"
    assert outcome["result"] == "Your day is free."
    runs = (await http.get(f"/automations/{automation_id}")).json()["runs"]
    assert [(run["id"], run["status"]) for run in runs] == [(outcome["run_id"], "ok")]
    assert "No automation with id 999999" in missing


async def test_wrong_key_fails_the_client(famulus: ServerProcess) -> None:
    statuses: list[int] = []
    with pytest.raises(Exception) as failed:  # noqa: PT011 (anyio wraps it in groups)
        async with mcp_session(famulus.base_url, "fam_wrong-key", statuses) as session:
            await session.list_tools()
    assert failed.group_contains(MCPError) or isinstance(failed.value, MCPError)
    assert statuses == [401]  # initialize was refused; nothing else was sent


def test_key_and_method_checks_over_plain_http(famulus: ServerProcess) -> None:
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    url = f"{famulus.base_url}/mcp"
    missing = httpx.post(url, json=ping)
    wrong = httpx.post(url, json=ping, headers={"Authorization": "Bearer fam_wrong"})
    for r in (missing, wrong):
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
        assert r.json()["code"] == "unauthorized"
    assert "Missing API key" in missing.json()["detail"]
    assert "Invalid API key" in wrong.json()["detail"]
    ok = httpx.post(url, json=ping, headers={**AUTH, "Accept": "application/json"})
    assert ok.status_code == 200 and ok.json() == {"jsonrpc": "2.0", "id": 1, "result": {}}
    get = httpx.get(url, headers=AUTH)
    assert get.status_code == 405 and get.headers["allow"] == "POST"
    assert get.json() == {
        "detail": "Method GET is not allowed on /mcp.",
        "code": "method_not_allowed",
    }


def test_other_paths_under_mcp_are_not_the_mcp_endpoint(famulus: ServerProcess) -> None:
    """Only exactly /mcp is the MCP server; the rest of /mcp/… is the route table's
    (the MCP client's /mcp/servers routes live there)."""
    r = httpx.get(f"{famulus.base_url}/mcp/nothing-here", headers=AUTH)
    assert r.status_code == 404
    assert r.json() == {"detail": "No route for GET /mcp/nothing-here.", "code": "not_found"}
    servers = httpx.get(f"{famulus.base_url}/mcp/servers", headers=AUTH)
    assert servers.headers["content-type"] == "application/json"
    if servers.status_code == 404:  # before the MCP client's routes exist
        assert servers.json()["detail"] == "No route for GET /mcp/servers."
    else:
        assert servers.status_code == 200, servers.text
