from __future__ import annotations

import httpx


async def test_health_and_session(client: httpx.AsyncClient, anon: httpx.AsyncClient) -> None:
    r = await anon.get("/health")
    assert r.json() == {"status": "ok", "version": "0.1.0"}
    r = await client.post("/sessions", json={"name": "hello"})
    assert r.status_code == 201
    assert r.json()["name"] == "hello"
