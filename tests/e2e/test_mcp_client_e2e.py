"""End to end: a real ``famulus serve`` with a registered stdio MCP server (the
``mcp``-package server in tests/support/mcp_server.py) and a scripted model that
calls its tools. Untrusted tools ask first; trusted ones run; a crashed, slow or
broken server never stops the run."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from tests.e2e.test_chat_e2e import AUTH, KEY, new_session, register_scripted, send
from tests.support.live import ServerProcess
from tests.support.mcp_server import stdio_command
from tests.support.scripted_openai import ScriptedOpenAI, Turn
from tests.support.sse_collector import SSECollector

MODEL = "scripted-model"


@pytest.fixture(scope="module")
def openai_server() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI([MODEL]) as server:
        yield server  # type: ignore[misc]


@pytest.fixture(scope="module")
def famulus(
    tmp_path_factory: pytest.TempPathFactory, openai_server: ScriptedOpenAI
) -> Iterator[ServerProcess]:
    home = tmp_path_factory.mktemp("mcp-e2e") / "home"
    env = {"FAMULUS_API_KEY": KEY, "FAMULUS_LOG_LEVEL": "warning", "FAMULUS_MCP_TIMEOUT_S": "3"}
    server = ServerProcess(home, env=env).start()
    with httpx.Client(base_url=server.base_url, headers=AUTH, timeout=10) as http:
        register_scripted(http, openai_server)
        command, args = stdio_command()
        body = {"name": "calc", "transport": "stdio", "command": command, "args": args}
        assert http.post("/mcp/servers", json=body).status_code == 201
    yield server
    server.stop()


@pytest.fixture
def http(famulus: ServerProcess, openai_server: ScriptedOpenAI) -> Iterator[httpx.Client]:
    openai_server.reset()
    with httpx.Client(base_url=famulus.base_url, headers=AUTH, timeout=30) as client:
        client.patch("/mcp/servers/calc", json={"trusted": False})
        yield client


def offered_tools(openai_server: ScriptedOpenAI) -> set[str]:
    return {t["function"]["name"] for t in openai_server.requests[0].get("tools", [])}


def run_tool(
    famulus: ServerProcess,
    http: httpx.Client,
    openai_server: ScriptedOpenAI,
    call: tuple[str, dict[str, Any]],
    approve: bool = False,
) -> tuple[SSECollector, dict[str, Any]]:
    """One run in which the model calls ``call`` once, then answers; its events."""
    openai_server.push(Turn(tool_calls=[call]), Turn(text="Done."))
    sid = new_session(http)
    with SSECollector(famulus.base_url, AUTH, sid) as sse:
        run = send(http, sid, "use the tool")
        if approve:
            need = sse.wait_for("approval_needed", timeout=30).data
            assert need["name"] == call[0]
            r = http.post(
                "/tools/result",
                json={"run_id": run["run_id"], "tool_id": need["tool_id"], "approved": True},
            )
            assert r.status_code == 200, r.text
        sse.wait_for("run_finished", timeout=30)
    results = sse.of("tool_result")
    assert len(results) == 1
    return sse, results[0]


def test_untrusted_tool_asks_then_runs(
    famulus: ServerProcess, http: httpx.Client, openai_server: ScriptedOpenAI
) -> None:
    sse, result = run_tool(
        famulus, http, openai_server, ("calc_add", {"a": 2, "b": 3}), approve=True
    )
    need = sse.of("approval_needed")[0]
    assert need["description"] == "Add two integers."
    assert need["args"] == {"a": 2, "b": 3}
    assert result["result"] == "5" and result["error"] is False
    assert {"calc_add", "calc_echo", "calc_crash"} <= offered_tools(openai_server)


def test_trusted_tool_runs_without_asking(
    famulus: ServerProcess, http: httpx.Client, openai_server: ScriptedOpenAI
) -> None:
    assert http.patch("/mcp/servers/calc", json={"trusted": True}).json()["trusted"] is True
    sse, result = run_tool(famulus, http, openai_server, ("calc_echo", {"text": "hi"}))
    assert "approval_needed" not in sse.types()
    assert result["result"] == "hi" and result["error"] is False


def test_crash_and_slow_calls_end_as_error_results(
    famulus: ServerProcess, http: httpx.Client, openai_server: ScriptedOpenAI
) -> None:
    http.patch("/mcp/servers/calc", json={"trusted": True})
    _, crashed = run_tool(famulus, http, openai_server, ("calc_crash", {}))
    assert crashed["error"] is True
    assert crashed["result"].startswith("MCP server 'calc' failed:")
    assert http.get("/mcp/servers/calc").json()["status"] == "error"
    openai_server.reset()
    _, slow = run_tool(famulus, http, openai_server, ("calc_slow", {"seconds": 30}))
    assert slow["error"] is True and "no answer within 3 s" in slow["result"]
    openai_server.reset()  # the crashed server was started again for these runs
    _, added = run_tool(famulus, http, openai_server, ("calc_add", {"a": 1, "b": 1}))
    assert added["result"] == "2" and added["error"] is False


def test_a_broken_server_is_left_out(
    famulus: ServerProcess, http: httpx.Client, openai_server: ScriptedOpenAI
) -> None:
    body = {"name": "broken", "transport": "stdio", "command": "/nonexistent/mcp"}
    assert http.post("/mcp/servers", json=body).status_code == 201
    try:
        openai_server.push(Turn(text="Still here."))
        sid = new_session(http)
        with SSECollector(famulus.base_url, AUTH, sid) as sse:
            send(http, sid, "hello")
            sse.wait_for("run_finished", timeout=30)
        assert sse.of("text")[0]["content"] == "Still here."
        tools = offered_tools(openai_server)
        assert "calc_add" in tools and not any(t.startswith("broken_") for t in tools)
        assert http.get("/mcp/servers/broken").json()["status"] == "error"
    finally:
        http.delete("/mcp/servers/broken")


def test_a_tool_name_taken_by_famulus_is_left_out(
    famulus: ServerProcess, http: httpx.Client, openai_server: ScriptedOpenAI
) -> None:
    """A server named "web" offers "search": web_search is famulus's own tool, so
    the server's is left out of the run instead of the run failing."""
    command, args = stdio_command()
    body = {"name": "web", "transport": "stdio", "command": command, "args": args}
    assert http.post("/mcp/servers", json=body).status_code == 201
    try:
        openai_server.push(Turn(text="Fine."))
        sid = new_session(http)
        with SSECollector(famulus.base_url, AUTH, sid) as sse:
            send(http, sid, "hello")
            sse.wait_for("run_finished", timeout=30)
        assert "run_error" not in sse.types()
        tools = [t["function"]["name"] for t in openai_server.requests[0].get("tools", [])]
        assert tools.count("web_search") == 1 and "web_add" in tools
        search = next(
            t for t in openai_server.requests[0]["tools"] if t["function"]["name"] == "web_search"
        )
        assert "Pretend" not in search["function"]["description"]
    finally:
        http.delete("/mcp/servers/web")
