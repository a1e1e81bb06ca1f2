"""The audit finds drift made on purpose; a re-index switches models without a gap."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from tests.support.memory_models import embeddings_server


def _memory(app: Any) -> Any:
    return app.state.container.memory.service


async def _add(client: httpx.AsyncClient, text: str) -> int:
    r = await client.post("/facts", json={"text": text})
    return int(r.json()["fact"]["id"])


async def test_audit_is_clean_then_reports_each_drift(app: Any, client: httpx.AsyncClient) -> None:
    ids = [await _add(client, f"Fact number {n} about gardening and roses") for n in range(5)]
    audit = (await client.get("/memory/audit")).json()
    assert audit["ok"] is True and audit["facts"]["total"] == 5
    assert audit["reindex"] == {"status": "idle", "done": 0, "total": 0}

    db = app.state.container.core.db

    def break_things(conn: Any) -> None:
        # 1: a fact without an embedding; 2: a stale embedding; 3: a missing FTS row;
        # 4: orphan links.
        conn.execute("DELETE FROM memory_vectors WHERE owner_id = ?", (ids[0],))
        conn.execute("UPDATE memory_vectors SET text_hash = 'x' WHERE owner_id = ?", (ids[1],))
        row = conn.execute("SELECT text FROM facts WHERE id = ?", (ids[2],)).fetchone()
        conn.execute(
            "INSERT INTO facts_fts (facts_fts, rowid, text) VALUES ('delete', ?, ?)",
            (ids[2], row[0]),
        )
        conn.execute(
            "INSERT INTO fact_links VALUES (?, 9999, 'related', 1.0, '2026-01-01T00:00:00Z')",
            (ids[3],),
        )

    await db.write(break_things)
    _memory(app).space.facts.remove(ids[4])  # the in-memory index drifts too
    audit = (await client.get("/memory/audit")).json()
    facts = audit["facts"]
    assert audit["ok"] is False
    assert facts["without_embedding_ids"] == [ids[0]]
    assert facts["stale_embedding_ids"] == [ids[1]]
    assert facts["fts_missing_ids"] == [ids[2]] and facts["fts_consistent"] is False
    assert facts["index_missing_ids"] == [ids[4]]
    assert audit["orphan_links"] == 1
    # The start-up repair embeds what has no vector.
    assert await _memory(app).backfill() == 3  # missing, stale, not indexed
    assert (await client.get("/memory/audit")).json()["facts"]["without_embedding"] == 0


@pytest.fixture
def openai_embeddings(app: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    with embeddings_server(delay=0.15) as server:
        llm = app.state.container.llm

        async def credential(provider: str) -> str | None:
            return "sk-test-embeddings" if provider == "openai" else None

        monkeypatch.setattr(llm, "credential", credential)
        monkeypatch.setattr(llm, "base_url", lambda provider: server["url"])
        yield server


async def test_reindex_switches_models_without_a_gap(
    app: Any, client: httpx.AsyncClient, openai_embeddings: Any
) -> None:
    ids = [await _add(client, f"Note {n}: the blue bicycle is in the shed") for n in range(70)]
    models = (await client.get("/models/embedding")).json()
    assert models["current"] == "local/all-MiniLM-L6-v2"
    small = next(m for m in models["models"] if m["id"] == "openai/text-embedding-3-small")
    assert small == {
        "id": "openai/text-embedding-3-small",
        "provider": "openai",
        "dimensions": 1536,
        "available": True,
    }
    r = await client.post(
        "/config/embedding", json={"embedding_model": "openai/text-embedding-3-small"}
    )
    assert r.status_code == 202, r.text
    assert r.json() == {
        "status": "reindexing",
        "embedding_model": "openai/text-embedding-3-small",
        "total": 70,
    }
    again = await client.post(
        "/config/embedding", json={"embedding_model": "local/all-MiniLM-L6-v2"}
    )
    assert again.status_code == 409
    # While it runs: recall still answers from the old vectors, and writes go on.
    running = (await client.get("/memory/audit")).json()["reindex"]
    assert running["status"] == "running" and running["total"] == 70
    late = await _add(client, "Written during the re-index: the red kayak")
    hits = (
        await client.post("/memory/recall/inspect", json={"query": "where is the bicycle"})
    ).json()
    assert hits["facts"] and hits["facts"][0]["cosine"] is not None
    assert (await client.get("/models/embedding")).json()["current"] == "local/all-MiniLM-L6-v2"
    for _ in range(200):
        state = (await client.get("/memory/audit")).json()["reindex"]
        if state["status"] != "running":
            break
        await asyncio.sleep(0.05)
    assert state == {
        "status": "completed",
        "done": 70,
        "total": 70,
        "embedding_model": "openai/text-embedding-3-small",
    }
    assert openai_embeddings["auth"] == "Bearer sk-test-embeddings"
    assert (await client.get("/models/embedding")).json()[
        "current"
    ] == "openai/text-embedding-3-small"
    audit = (await client.get("/memory/audit")).json()
    assert audit["ok"] is True and audit["facts"]["total"] == 71
    assert len(_memory(app).space.facts) == 71 and late in _memory(app).space.facts.ids()
    # Exact text still reaches the fact through the full-text side.
    hits = (await client.post("/memory/recall/inspect", json={"query": "red kayak"})).json()
    assert hits["facts"][0]["id"] == late
    assert ids[0] in [
        f["id"] for f in (await client.get("/facts", params={"q": "bicycle"})).json()["facts"]
    ]


async def test_embedding_config_errors(client: httpx.AsyncClient) -> None:
    r = await client.post("/config/embedding", json={"embedding_model": "nope/unknown"})
    assert r.status_code == 422 and "Unknown embedding model" in r.json()["detail"]
    r = await client.post(
        "/config/embedding", json={"embedding_model": "openai/text-embedding-3-small"}
    )
    assert r.status_code == 422 and "not connected" in r.json()["detail"]
    assert (await client.post("/config/embedding", json={})).status_code == 422
    models = (await client.get("/models/embedding")).json()
    assert all(not m["available"] for m in models["models"] if m["provider"] != "local")


async def test_start_up_backfill_runs_in_the_background(settings: Any) -> None:
    """Rows without vectors are embedded after start, not during it: the app
    answers at once and the audit shows the backfill's progress."""
    import sqlite3
    import time

    from tests.conftest import API_KEY

    from famulus.app import create_app

    auth = {"Authorization": f"Bearer {API_KEY}"}
    first = create_app(settings)
    async with first.router.lifespan_context(first):
        transport = httpx.ASGITransport(app=first)
        async with httpx.AsyncClient(transport=transport, base_url="http://t", headers=auth) as c:
            for n in range(100):
                await c.post("/facts", json={"text": f"Note {n}: the ladder is behind the shed"})
    conn = sqlite3.connect(settings.db_path)  # as after a crash between row and vector
    conn.execute("DELETE FROM memory_vectors")
    conn.commit()
    conn.close()

    second = create_app(settings)
    service = second.state.container.memory.service
    real = service._embed_rows
    gate = asyncio.Event()

    async def held(*args: Any) -> None:
        await gate.wait()
        await real(*args)

    service._embed_rows = held
    began = time.monotonic()
    async with second.router.lifespan_context(second):
        assert time.monotonic() - began < 5  # start did not wait for 100 embeddings
        transport = httpx.ASGITransport(app=second)
        async with httpx.AsyncClient(transport=transport, base_url="http://t", headers=auth) as c:
            state = (await c.get("/memory/audit")).json()["backfill"]
            assert state["status"] == "running" and state["total"] == 100 and state["done"] == 0
            gate.set()
            for _ in range(200):
                audit = (await c.get("/memory/audit")).json()
                if audit["backfill"]["status"] != "running":
                    break
                await asyncio.sleep(0.05)
            assert audit["backfill"]["status"] == "completed"
            assert audit["backfill"]["done"] == 100 and audit["ok"] is True
