"""The MCP tools' waiting rules, called directly on the app's services: a chat
that outlasts the wait is cancelled and reported; an automation goes on."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from mcp.server.mcpserver.exceptions import ToolError
from tests.support.chat_models import install_model, scripted
from tests.support.triggers import never_soon

from famulus.mcp_server.tools import FamulusTools


def _tools(app: Any, wait_s: float) -> FamulusTools:
    c = app.state.container
    return FamulusTools(c.memory.service, c.sessions, c.events, c.chat, c.automations, wait_s)


async def test_a_chat_past_the_wait_is_cancelled_and_a_tool_error(
    app: Any, client: httpx.AsyncClient
) -> None:
    install_model(app, scripted(" ".join(["slow"] * 200), delay=0.05))
    sid = (await client.post("/sessions", json={"name": "mcp"})).json()["session_id"]
    with pytest.raises(ToolError) as refused:
        await _tools(app, 0.3).chat("take your time", session_id=sid)
    assert "longer than 0 s and was cancelled" in str(refused.value)
    assert sid in str(refused.value)
    assert not app.state.container.chat.active  # nothing left running


async def test_an_automation_past_the_wait_is_running_and_goes_on(
    app: Any, client: httpx.AsyncClient
) -> None:
    install_model(app, scripted("one two three four five six", delay=0.1))
    body = {"name": "Slow", "description": "Take a while.", "trigger": never_soon()}
    aid = (await client.post("/automations", json=body)).json()["id"]
    tools = _tools(app, 0.1)
    outcome = await tools.run_automation(aid)
    assert (outcome.status, outcome.result) == ("running", None)
    with pytest.raises(ToolError, match="already running"):
        await tools.run_automation(aid)
    for _ in range(200):
        runs = (await client.get(f"/automations/{aid}")).json()["runs"]
        if runs[0]["status"] != "running":
            break
        await asyncio.sleep(0.05)
    assert runs[0]["id"] == outcome.run_id and runs[0]["status"] == "ok"
    assert runs[0]["result"] == "one two three four five six"
