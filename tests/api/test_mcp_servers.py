"""MCP servers the person registers (``/mcp/servers``): CRUD, validation, secrets,
tool listing over stdio and HTTP, and what a crashed, slow or broken server does.
The server is a real one written with the ``mcp`` package (tests/support/mcp_server.py)."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from pydantic_ai.exceptions import ApprovalRequired
from tests.conftest import API_KEY
from tests.support.live import free_port
from tests.support.mcp_server import http_server, stdio_command

from famulus.agent import scope
from famulus.agent.outcome import ToolFailure
from famulus.app import create_app
from famulus.mcp.connection import Connection, McpFailure, ServerSpec, Timeouts
from famulus.mcp.registry import McpRegistry
from famulus.mcp.toolset import ServerToolset
from famulus.settings import Settings

SECRET = "very-secret-token-0123456789"


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[tuple[httpx.AsyncClient, McpRegistry]]:
    settings = Settings(
        home=tmp_path / "home",
        api_key=API_KEY,  # type: ignore[arg-type]
        project_dir=tmp_path,
        mcp_timeout_s=3.0,
        mcp_connect_timeout_s=30.0,
    )
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://t", headers={"Authorization": f"Bearer {API_KEY}"}
        ) as c:
            yield c, app.state.container.mcp_servers


@pytest.fixture
def http_url() -> Iterator[str]:
    with http_server(free_port(), token=SECRET) as url:
        yield url


def stdio_body(name: str = "local", **extra: Any) -> dict[str, Any]:
    command, args = stdio_command()
    return {"name": name, "transport": "stdio", "command": command, "args": args, **extra}


async def toolset(registry: McpRegistry, name: str) -> ServerToolset:
    found = [t for t in await registry.toolsets() if t.id == f"mcp:{name}"]
    assert len(found) == 1, f"no toolset for {name}"
    assert isinstance(found[0], ServerToolset)
    return found[0]


async def test_crud_never_returns_secrets(
    env: tuple[httpx.AsyncClient, McpRegistry], tmp_path: Path
) -> None:
    client, _ = env
    r = await client.post("/mcp/servers", json=stdio_body(env={"API_TOKEN": SECRET}))
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["env"] == {"API_TOKEN": "ver…6789"}
    assert body["status"] == "idle" and body["tool_count"] is None
    assert body["trusted"] is False and body["enabled"] is True
    assert body["headers"] == {} and body["url"] is None
    listed = await client.get("/mcp/servers")
    assert [s["name"] for s in listed.json()["servers"]] == ["local"]
    r = await client.patch("/mcp/servers/local", json={"trusted": True, "env": {"B": "x"}})
    assert r.status_code == 200 and r.json()["trusted"] is True
    assert r.json()["env"] == {"B": "…"}
    for path in ("/mcp/servers", "/mcp/servers/local"):
        assert SECRET not in (await client.get(path)).text
    secrets = json.loads((tmp_path / "home" / "secrets.json").read_text())
    assert secrets["mcp:local"] == {"env": {"B": "x"}, "headers": {}}
    r = await client.delete("/mcp/servers/local")
    assert r.json() == {"status": "deleted"}
    assert (await client.get("/mcp/servers/local")).status_code == 404
    assert "mcp:local" not in json.loads((tmp_path / "home" / "secrets.json").read_text())


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({"name": "Upper", "transport": "stdio", "command": "x"}, ["body", "name"]),
        ({"name": "a" * 33, "transport": "stdio", "command": "x"}, ["body", "name"]),
        ({"name": "-x", "transport": "stdio", "command": "x"}, ["body", "name"]),
        ({"name": "x", "transport": "stdio"}, ["body", "command"]),
        ({"name": "x", "transport": "stdio", "command": "  "}, ["body", "command"]),
        ({"name": "x", "transport": "http"}, ["body", "url"]),
        ({"name": "x", "transport": "http", "url": "ftp://h/mcp"}, ["body", "url"]),
        ({"name": "x", "transport": "http", "url": "http:///mcp"}, ["body", "url"]),
        ({"name": "x", "transport": "stdio", "command": "c", "url": "http://h"}, ["body", "url"]),
        ({"name": "x", "transport": "http", "url": "http://h", "env": {"A": "b"}}, ["body", "env"]),
        (
            {"name": "x", "transport": "stdio", "command": "c", "env": {"1A": "b"}},
            ["body", "env", "1A"],
        ),
        (
            {"name": "x", "transport": "http", "url": "http://h", "headers": {"X": "a\r\nB: c"}},
            ["body", "headers", "X"],
        ),
        (
            {"name": "x", "transport": "http", "url": "http://h", "headers": {"Host": "e"}},
            ["body", "headers", "Host"],
        ),
        ({"name": "x", "transport": "ws", "url": "http://h"}, ["body", "transport"]),
        ({"name": "x", "transport": "stdio", "command": "c", "extra": 1}, ["body", "extra"]),
        ({"name": "x", "transport": "stdio", "command": "c", "args": [1]}, ["body", "args", 0]),
    ],
)
async def test_bad_configs_are_422(
    env: tuple[httpx.AsyncClient, McpRegistry], body: dict[str, Any], loc: list[Any]
) -> None:
    client, _ = env
    r = await client.post("/mcp/servers", json=body)
    assert r.status_code == 422, r.text
    assert r.json()["code"] == "invalid_request"
    assert loc in [e["loc"] for e in r.json()["errors"]], r.json()
    assert (await client.get("/mcp/servers")).json() == {"servers": []}


JSON = {"Content-Type": "application/json"}


async def test_a_lone_surrogate_is_400_and_nothing_is_stored(
    env: tuple[httpx.AsyncClient, McpRegistry],
) -> None:
    """It was a 500 after the row was stored, and every later listing a 500."""
    client, _ = env
    bodies = [
        {"name": "s1", "transport": "stdio", "command": "x", "args": ["\ud800"]},
        {"name": "s2", "transport": "stdio", "command": "x\udfff"},
        {"name": "s3", "transport": "http", "url": "http://a.test/\ud800"},
        {"name": "s4", "transport": "stdio", "command": "x", "env": {"A": "\ud800"}},
    ]
    for body in bodies:  # as a browser's JSON.stringify sends it: escaped
        r = await client.post("/mcp/servers", content=json.dumps(body), headers=JSON)
        assert r.status_code == 400 and "surrogate" in r.json()["detail"], r.text
    assert (await client.get("/mcp/servers")).json() == {"servers": []}
    # A surrogate pair (an emoji) is text, and so is an escaped backslash before "ud800".
    body = {"name": "ok", "transport": "stdio", "command": "x", "args": ["😀", "\\ud800"]}
    r = await client.post("/mcp/servers", content=json.dumps(body), headers=JSON)
    assert r.status_code == 201 and r.json()["args"] == ["😀", "\\ud800"]


async def test_conflicts_and_patch_rules(env: tuple[httpx.AsyncClient, McpRegistry]) -> None:
    client, _ = env
    assert (await client.post("/mcp/servers", json=stdio_body())).status_code == 201
    assert (await client.post("/mcp/servers", json=stdio_body())).status_code == 409
    assert (await client.patch("/mcp/servers/local", json={})).status_code == 422
    assert (await client.patch("/mcp/servers/local", json={"trusted": None})).status_code == 422
    assert (await client.patch("/mcp/servers/local", json={"name": "y"})).status_code == 422
    assert (await client.patch("/mcp/servers/local", json={"url": "http://h"})).status_code == 422
    assert (await client.patch("/mcp/servers/nope", json={"trusted": True})).status_code == 404
    assert (await client.delete("/mcp/servers/nope")).status_code == 404
    assert (await client.get("/mcp/servers/nope/tools")).status_code == 404


async def test_stdio_tools_env_and_disable(env: tuple[httpx.AsyncClient, McpRegistry]) -> None:
    client, registry = env
    os.environ["OPENAI_API_KEY"] = "famulus-own-key"  # famulus's env must not reach the child
    try:
        await client.post("/mcp/servers", json=stdio_body(env={"MCP_TEST_TOKEN": SECRET}))
        r = await client.get("/mcp/servers/local/tools")
        assert r.status_code == 200, r.text
        tools = {t["name"]: t for t in r.json()["tools"]}
        assert r.json()["server"] == "local"
        assert {"add", "echo", "env", "pid", "slow", "crash", "fail"} <= set(tools)
        assert tools["add"]["agent_name"] == "local_add"
        assert tools["add"]["description"] == "Add two integers."
        assert tools["add"]["input_schema"]["required"] == ["a", "b"]
        info = (await client.get("/mcp/servers/local")).json()
        assert info["status"] == "connected" and info["tool_count"] == len(tools)
        local = await toolset(registry, "local")
        assert await local.connection.call("env", {"name": "MCP_TEST_TOKEN"}) == SECRET
        assert await local.connection.call("env", {"name": "OPENAI_API_KEY"}) == "(unset)"
    finally:
        del os.environ["OPENAI_API_KEY"]
    with pytest.raises(McpFailure, match="the tool reported an error"):
        await local.connection.call("fail", {"reason": "nope"})
    r = await client.patch("/mcp/servers/local", json={"enabled": False})
    assert r.json()["status"] == "disabled"
    assert (await client.get("/mcp/servers/local/tools")).status_code == 409
    assert [t for t in await registry.toolsets() if t.id == "mcp:local"] == []


async def test_http_server_with_header(
    env: tuple[httpx.AsyncClient, McpRegistry], http_url: str
) -> None:
    client, _ = env
    headers = {"Authorization": f"Bearer {SECRET}"}
    body = {"name": "remote", "transport": "http", "url": http_url, "headers": headers}
    r = await client.post("/mcp/servers", json=body)
    assert r.status_code == 201 and r.json()["headers"] == {"Authorization": "Bea…6789"}
    r = await client.get("/mcp/servers/remote/tools")
    assert r.status_code == 200, r.text
    assert "remote_echo" in [t["agent_name"] for t in r.json()["tools"]]
    # Without the header the server refuses: a 502 that says which server failed.
    await client.post("/mcp/servers", json={"name": "nokey", "transport": "http", "url": http_url})
    r = await client.get("/mcp/servers/nokey/tools")
    assert r.status_code == 502, r.text
    assert r.json()["detail"].startswith("MCP server 'nokey' failed:")
    assert SECRET not in r.text
    assert (await client.get("/mcp/servers/nokey")).json()["status"] == "error"


async def test_a_server_that_cannot_start(env: tuple[httpx.AsyncClient, McpRegistry]) -> None:
    client, registry = env
    body = {"name": "broken", "transport": "stdio", "command": "/nonexistent/mcp-server"}
    await client.post("/mcp/servers", json=body)
    assert await registry.toolsets() == []  # left out of the run, not an error
    r = await client.get("/mcp/servers/broken/tools")
    assert r.status_code == 502
    assert "could not be started" in r.json()["detail"]
    info = (await client.get("/mcp/servers/broken")).json()
    assert info["status"] == "error" and "could not be started" in info["last_error"]


async def test_crash_slow_and_restart(env: tuple[httpx.AsyncClient, McpRegistry]) -> None:
    client, registry = env
    await client.post("/mcp/servers", json=stdio_body())
    local = await toolset(registry, "local")
    first_pid = await local.connection.call("pid", {})
    with pytest.raises(McpFailure, match="no answer within 3 s"):
        await local.connection.call("slow", {"seconds": 20})
    assert await local.connection.call("add", {"a": 2, "b": 3}) == 5  # still the same server
    with pytest.raises(McpFailure, match="restarted on next use"):
        await local.connection.call("crash", {})
    info = (await client.get("/mcp/servers/local")).json()
    assert info["status"] == "error" and info["last_error"]
    # Next use starts it again.
    again = await toolset(registry, "local")
    second_pid = await again.connection.call("pid", {})
    assert second_pid != first_pid
    assert (await client.get("/mcp/servers/local")).json()["status"] == "connected"


async def test_stop_ends_the_processes(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", api_key=API_KEY, project_dir=tmp_path)  # type: ignore[arg-type]
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        registry: McpRegistry = app.state.container.mcp_servers
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://t", headers={"Authorization": f"Bearer {API_KEY}"}
        ) as client:
            await client.post("/mcp/servers", json=stdio_body())
        pid = await (await toolset(registry, "local")).connection.call("pid", {})
        assert _alive(pid)
    assert not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_status_notices_a_server_killed_while_idle(
    env: tuple[httpx.AsyncClient, McpRegistry], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, registry = env
    monkeypatch.setattr("famulus.mcp.connection.PING_AFTER_IDLE_S", 0.0)
    await client.post("/mcp/servers", json=stdio_body())
    pid = await (await toolset(registry, "local")).connection.call("pid", {})
    os.kill(pid, signal.SIGKILL)
    info = (await client.get("/mcp/servers/local")).json()
    assert info["status"] == "error" and info["last_error"] == "it had stopped answering"
    # A run restarts it before relying on it.
    again = await (await toolset(registry, "local")).connection.call("pid", {})
    assert again != pid and _alive(again)


async def test_a_removed_server_is_not_restarted_by_a_run_holding_it(
    env: tuple[httpx.AsyncClient, McpRegistry],
) -> None:
    client, registry = env
    await client.post("/mcp/servers", json=stdio_body())
    held = await toolset(registry, "local")
    pid = await held.connection.call("pid", {})
    assert (await client.delete("/mcp/servers/local")).status_code == 200
    assert not _alive(pid)
    with pytest.raises(McpFailure, match="changed or removed"):
        await held.connection.call("pid", {})
    assert held.connection.state != "connected"


async def test_a_server_that_never_answers_is_given_up(tmp_path: Path) -> None:
    spec = ServerSpec(
        name="hang",
        transport="stdio",
        command=sys.executable,
        args=("-c", "import time; time.sleep(60)"),
    )
    connection = Connection(spec, Timeouts(call_s=3, connect_s=2), tmp_path)
    started = time.monotonic()
    with pytest.raises(McpFailure, match="did not answer within 2 s"):
        await connection.open()
    assert time.monotonic() - started < 15
    assert connection.state == "error"
    with pytest.raises(McpFailure, match="next try in"):  # backing off: not started again
        await connection.open()
    await connection.close()


async def test_approval_and_read_only_automations(
    env: tuple[httpx.AsyncClient, McpRegistry],
) -> None:
    client, registry = env
    await client.post("/mcp/servers", json=stdio_body())
    untrusted = await toolset(registry, "local")
    asking = SimpleNamespace(tool_call_approved=False)
    approved = SimpleNamespace(tool_call_approved=True)
    add = untrusted.tools["local_add"]
    with pytest.raises(ApprovalRequired):
        await untrusted.call_tool("local_add", {"a": 1, "b": 2}, asking, add)  # type: ignore[arg-type]
    assert await untrusted.call_tool("local_add", {"a": 1, "b": 2}, approved, add) == 3  # type: ignore[arg-type]

    await client.patch("/mcp/servers/local", json={"trusted": True})
    trusted = await toolset(registry, "local")
    echo = trusted.tools["local_echo"]
    with scope.running(scope.RunScope(origin="automation", read_only=True)) as run:
        refused = await trusted.call_tool("local_add", {"a": 1, "b": 2}, asking, add)  # type: ignore[arg-type]
        assert isinstance(refused, ToolFailure) and refused == scope.READ_ONLY_REFUSAL
        # Declared read-only by the server: allowed.
        assert await trusted.call_tool("local_echo", {"text": "hi"}, asking, echo) == "hi"  # type: ignore[arg-type]
        assert run.sources == ["mcp:local"]
    tools = (await client.get("/mcp/servers/local/tools")).json()["tools"]
    assert {t["name"]: t["read_only"] for t in tools}["echo"] is True


async def test_a_huge_result_is_cut(env: tuple[httpx.AsyncClient, McpRegistry]) -> None:
    client, registry = env
    await client.post("/mcp/servers", json=stdio_body(trusted=True))
    local = await toolset(registry, "local")
    ctx = SimpleNamespace(tool_call_approved=False)
    text = "x" * 60_000
    got = await local.call_tool("local_echo", {"text": text}, ctx, local.tools["local_echo"])  # type: ignore[arg-type]
    assert got.startswith("x" * 50_000) and got.endswith("[… 10000 more characters cut by famulus]")
