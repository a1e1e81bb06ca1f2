"""Memory work that is pending when the server dies is done after the next start.

Real ``famulus serve`` processes over one FAMULUS_HOME, killed with SIGKILL:
an extraction still waiting on its quiet timer, and a re-index to another
embedding model stopped midway (started again, it finishes the rest).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.live import ServerProcess
from tests.support.memory_models import embeddings_server
from tests.support.scripted_openai import ScriptedOpenAI, Turn

KEY = "e2e-memory-key-abcdefghijklmnopqrstuvwxyz012"
AUTH = {"Authorization": f"Bearer {KEY}"}
MODEL = "scripted-memory-model"
FACT = "The person's sister Ines lives in Porto"


def _answer(body: dict[str, Any]) -> Turn:
    """Chat turns get text; the memory model's jobs get their structured output."""
    tools = {t["function"]["name"] for t in body.get("tools", [])}
    output = next((t for t in tools if t.startswith("final_result")), None)
    if output is None:
        return Turn(text="Noted.")
    said = " ".join(str(m.get("content") or "") for m in body["messages"])
    if "Conversation:" in said:
        return Turn(tool_calls=[(output, {"facts": [{"text": FACT, "kind": "relationship"}]})])
    return Turn(tool_calls=[(output, {"observations": [], "profile": []})])


@pytest.fixture
def model_server() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI([MODEL]) as server:
        server.responder = _answer
        yield server  # type: ignore[misc]


def _env(**extra: str) -> dict[str, str]:
    return {"FAMULUS_API_KEY": KEY, "FAMULUS_LOG_LEVEL": "warning", **extra}


def _until(check: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_extraction_waiting_at_a_kill_is_done_after_restart(
    tmp_path: Path, model_server: ScriptedOpenAI
) -> None:
    home = tmp_path / "home"
    first = ServerProcess(home, env=_env(FAMULUS_MEMORY_QUIET_S="3600")).start()
    try:
        with httpx.Client(base_url=first.base_url, headers=AUTH, timeout=10) as http:
            custom = {
                "model_id": MODEL,
                "base_url": model_server.base_url,
                "context_window": 8000,
                "max_output_tokens": 500,
            }
            assert http.post("/models/custom", json=custom).status_code == 201
            r = http.patch("/config", json={"chat_model": MODEL, "memory_model": MODEL})
            assert r.status_code == 200, r.text
            sid = http.post("/sessions", json={"name": "family"}).json()["session_id"]
            r = http.post(
                "/chat/message",
                json={"message": "My sister Ines lives in Porto.", "session_id": sid},
            )
            assert r.status_code == 202, r.text

            def answered() -> bool:
                hist = http.get("/session/history", params={"session_id": sid}).json()
                return any(m["role"] == "assistant" for m in hist["messages"])

            _until(answered, what="the chat answer")
            assert http.get("/stats").json()["fact_count"] == 0  # the timer still waits
    finally:
        first.stop(kill=True)

    second = ServerProcess(home, env=_env(FAMULUS_MEMORY_QUIET_S="0.2")).start()
    try:
        with httpx.Client(base_url=second.base_url, headers=AUTH, timeout=10) as http:
            found = _until(
                lambda: http.get("/facts", params={"q": "Ines Porto"}).json()["facts"],
                what="the extracted fact",
            )
            assert [f["text"] for f in found] == [FACT]
            assert found[0]["provenance"]["session_id"] == sid
            assert found[0]["source_type"] == "chat"
            # Extracted once: the mark moved, a further start has nothing to do.
            r = http.post("/memory/extract", json={"session_id": sid})
            assert r.json()["created"] == [] and r.json()["merged"] == []
    finally:
        second.stop()


def test_reindex_killed_midway_completes_after_restart(tmp_path: Path) -> None:
    home = tmp_path / "home"
    target = "openai/text-embedding-3-small"
    with embeddings_server(delay=0.4) as emb:
        env = _env(FAMULUS_OPENAI_BASE_URL=emb["url"])
        first = ServerProcess(home, env=env).start()
        try:
            with httpx.Client(base_url=first.base_url, headers=AUTH, timeout=30) as http:
                r = http.post("/providers/openai/connect", json={"api_key": "sk-test-embed"})
                assert r.status_code == 200, r.text
                for n in range(200):
                    text = f"Note {n}: the spare tyre is in the garage"
                    assert http.post("/facts", json={"text": text}).status_code == 201
                r = http.post("/config/embedding", json={"embedding_model": target})
                assert r.status_code == 202, r.text

                def one_batch_in() -> bool:
                    state = http.get("/memory/audit").json()["reindex"]
                    assert state["status"] == "running", state
                    return bool(state["done"] >= 64)

                _until(one_batch_in, what="the first batch")
        finally:
            first.stop(kill=True)
        embedded_before = emb["texts"]
        assert embedded_before < 200  # killed midway

        second = ServerProcess(home, env=env).start()
        try:
            with httpx.Client(base_url=second.base_url, headers=AUTH, timeout=30) as http:
                # Started again, it embeds only what the killed one had not stored.
                r = http.post("/config/embedding", json={"embedding_model": target})
                assert r.status_code == 202, r.text
                assert 0 < r.json()["total"] < 200

                def completed() -> dict[str, Any] | None:
                    state = http.get("/memory/audit").json()["reindex"]
                    return dict(state) if state["status"] == "completed" else None

                state = _until(completed, what="the resumed re-index")
                assert state["done"] == state["total"]
                assert http.get("/models/embedding").json()["current"] == target
                audit = http.get("/memory/audit").json()
                assert audit["ok"] is True and audit["facts"]["total"] == 200
                assert audit["embedding_model"] == target
                # Only what was missing was embedded again (at most the batch in flight).
                assert 200 <= emb["texts"] <= 200 + 64
                # Recall embeds the query with the new model: the same text is cosine 1.
                query = {"query": "Note 7: the spare tyre is in the garage"}
                hits = http.post("/memory/recall/inspect", json=query).json()
                assert hits["facts"][0]["text"] == query["query"]
                assert hits["facts"][0]["cosine"] == pytest.approx(1.0, abs=1e-3)
        finally:
            second.stop()
