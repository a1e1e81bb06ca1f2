"""Messages acknowledged with ``202 queued`` survive a kill -9 of the server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.e2e.test_chat_e2e import AUTH, KEY, new_session, register_scripted, send
from tests.support.live import ServerProcess
from tests.support.scripted_openai import ScriptedOpenAI, Turn
from tests.support.sse_collector import SSECollector


@pytest.fixture
def openai_server() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI(["scripted-model"]) as server:
        yield server  # type: ignore[misc]


def test_queued_messages_survive_kill_9(tmp_path: Path, openai_server: ScriptedOpenAI) -> None:
    server = ServerProcess(
        tmp_path / "home", env={"FAMULUS_API_KEY": KEY, "FAMULUS_LOG_LEVEL": "warning"}
    ).start()
    try:
        with httpx.Client(base_url=server.base_url, headers=AUTH, timeout=10) as http:
            register_scripted(http, openai_server)
            openai_server.push(Turn(text=" ".join(f"w{i}" for i in range(400)), chunk_delay=0.05))
            sid = new_session(http)
            with SSECollector(server.base_url, AUTH, sid, stream=True) as sse:
                first = send(http, sid, "a slow answer, please")
                sse.wait_for("text_delta", count=2)
                queued = [send(http, sid, f"queued {i}") for i in range(3)]
            assert all(q["queued"] is True and q["run_id"] == first["run_id"] for q in queued)
            server.stop(kill=True)
        server.start()
        with httpx.Client(base_url=server.base_url, headers=AUTH, timeout=10) as http:
            hist = http.get("/session/history", params={"session_id": sid}).json()["messages"]
        users = [m["content"] for m in hist if m["role"] == "user"]
        assert users == ["a slow answer, please", "queued 0", "queued 1", "queued 2"], hist
        # a second restart delivers nothing twice
        server.stop()
        server.start()
        with httpx.Client(base_url=server.base_url, headers=AUTH, timeout=10) as http:
            again = http.get("/session/history", params={"session_id": sid}).json()["messages"]
        assert [m["content"] for m in again if m["role"] == "user"] == users
    finally:
        server.stop()


def test_queued_messages_are_taken_in_once(tmp_path: Path, openai_server: ScriptedOpenAI) -> None:
    """The normal path: a queued message reaches history exactly once."""
    server = ServerProcess(
        tmp_path / "home", env={"FAMULUS_API_KEY": KEY, "FAMULUS_LOG_LEVEL": "warning"}
    ).start()
    try:
        with httpx.Client(base_url=server.base_url, headers=AUTH, timeout=10) as http:
            register_scripted(http, openai_server)
            openai_server.push(Turn(text=" ".join(f"w{i}" for i in range(30)), chunk_delay=0.03))
            openai_server.push(Turn(text="Second answer."))
            openai_server.push(Turn(text="Third answer."))
            sid = new_session(http)
            with SSECollector(server.base_url, AUTH, sid, stream=True) as sse:
                send(http, sid, "first")
                sse.wait_for("text_delta", count=2)
                assert send(http, sid, "second")["queued"] is True
                sse.wait_for("message_ingested")
                sse.wait_for("run_finished")
            server.stop()
            server.start()
            hist = http.get("/session/history", params={"session_id": sid}).json()["messages"]
        users = [m["content"] for m in hist if m["role"] == "user"]
        assert users == ["first", "second"], hist
    finally:
        server.stop()
