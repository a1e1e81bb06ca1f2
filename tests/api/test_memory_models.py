"""The multilingual local model is offered and, once chosen, serves a German question."""

from __future__ import annotations

import asyncio

import httpx


async def test_switching_to_the_multilingual_model_reindexes_and_answers_german(
    client: httpx.AsyncClient,
) -> None:
    texts = [
        "My dentist is Dr. Okafor on Linden Street",
        "We adopted a rescue greyhound called Pixel",
        "I tore a ligament in my knee while skiing in Austria",
    ]
    ids = [(await client.post("/facts", json={"text": t})).json()["fact"]["id"] for t in texts]
    models = (await client.get("/models/embedding")).json()
    assert {
        "id": "local/multilingual-e5-small",
        "provider": "local",
        "dimensions": 384,
        "available": True,
    } in models["models"]
    r = await client.post(
        "/config/embedding", json={"embedding_model": "local/multilingual-e5-small"}
    )
    assert r.status_code == 202, r.text
    assert r.json()["total"] == 3
    for _ in range(400):
        state = (await client.get("/memory/audit")).json()["reindex"]
        if state["status"] != "running":
            break
        await asyncio.sleep(0.05)
    assert state["status"] == "completed" and state["done"] == 3, state
    current = (await client.get("/models/embedding")).json()["current"]
    assert current == "local/multilingual-e5-small"
    hits = (
        await client.post("/memory/recall/inspect", json={"query": "Was für einen Hund haben wir?"})
    ).json()
    assert hits["facts"][0]["id"] == ids[1]
