"""Facts, observations, profile, dreams, stats and clear through the API."""

from __future__ import annotations

from typing import Any

import httpx

FACTS = [
    "My dentist is Dr. Okafor on Linden Street",
    "I prefer green tea over coffee in the morning",
    "My sister Anna lives in Lisbon and works as an architect",
    "The car needs its annual inspection in March",
]


def _memory(app: Any) -> Any:
    return app.state.container.memory.service


async def _add(client: httpx.AsyncClient, text: str, kind: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"text": text}
    if kind:
        body["kind"] = kind
    r = await client.post("/facts", json=body)
    assert r.status_code == 201, r.text
    return dict(r.json()["fact"])


async def _recalled(client: httpx.AsyncClient, query: str) -> list[int]:
    r = await client.post("/memory/recall/inspect", json={"query": query})
    assert r.status_code == 200, r.text
    return [f["id"] for f in r.json()["facts"]]


async def test_fact_crud_filters_and_pagination(client: httpx.AsyncClient) -> None:
    ids = [(await _add(client, t, "preference" if "prefer" in t else None))["id"] for t in FACTS]
    fact = (await client.get(f"/facts/{ids[0]}")).json()
    assert set(fact) == {"fact", "entities", "linked_facts"}
    assert fact["fact"]["source_type"] == "manual" and fact["fact"]["kind"] == "fact"
    for key in (
        "id",
        "text",
        "kind",
        "source_type",
        "source_ref",
        "created_at",
        "updated_at",
        "access_count",
        "last_accessed_at",
        "archived_at",
    ):
        assert key in fact["fact"]
    page = (await client.get("/facts", params={"limit": 2, "offset": 1})).json()
    assert page["total"] == 4 and len(page["facts"]) == 2
    assert (await client.get("/facts", params={"kind": "preference"})).json()["total"] == 1
    assert (await client.get("/facts", params={"source_type": "chat"})).json()["total"] == 0
    found = (await client.get("/facts", params={"q": "Lisbon"})).json()
    assert [f["id"] for f in found["facts"]] == [ids[2]]
    r = await client.patch(f"/facts/{ids[1]}", json={"kind": "instruction"})
    assert r.json()["fact"]["kind"] == "instruction"
    r = await client.delete(f"/facts/{ids[3]}")
    assert r.json() == {"status": "deleted", "fact_id": ids[3]}
    assert (await client.get(f"/facts/{ids[3]}")).status_code == 404
    stats = (await client.get("/stats")).json()
    assert stats == {"fact_count": 3, "observation_count": 0, "profile_count": 0, "dream_count": 0}


async def test_fact_errors(client: httpx.AsyncClient) -> None:
    assert (await client.get("/facts/999")).status_code == 404
    assert (await client.patch("/facts/999", json={"text": "x"})).status_code == 404
    r = await client.delete("/facts/999")
    assert r.status_code == 404 and r.json()["code"] == "not_found"
    for bad in (
        {},
        {"text": ""},
        {"text": 5},
        {"text": "x", "extra": 1},
        {"text": "x", "kind": "Bad Kind"},
    ):
        r = await client.post("/facts", json=bad)
        assert r.status_code == 422, bad
        assert r.json()["code"] == "invalid_request" and r.json()["errors"]
    assert (await client.post("/facts", json={"text": "   "})).status_code == 422
    assert (await client.get("/facts", params={"limit": 201})).status_code == 422
    assert (await client.get("/facts", params={"offset": -1})).status_code == 422
    fact = await _add(client, "Temporary")
    assert (await client.patch(f"/facts/{fact['id']}", json={})).status_code == 422


async def test_recall_follows_edits_and_deletes_at_once(client: httpx.AsyncClient) -> None:
    ids = [(await _add(client, t))["id"] for t in FACTS]
    assert ids[0] in await _recalled(client, "who looks after my teeth?")
    await client.patch(f"/facts/{ids[0]}", json={"text": "My piano teacher is Mr. Brandt"})
    # The old words are gone from the full-text index at once (the vectors may
    # still rank the piano teacher low for a question about a dentist).
    r = await client.post("/memory/recall/inspect", json={"query": "Okafor dentist teeth"})
    assert all(f["fts_rank"] is None for f in r.json()["facts"] if f["id"] == ids[0])
    assert ids[0] in await _recalled(client, "who teaches me music?")
    await client.delete(f"/facts/{ids[2]}")
    assert ids[2] not in await _recalled(client, "where does my sister live?")
    inspect = (await client.post("/memory/recall/inspect", json={"query": "piano lessons"})).json()
    assert set(inspect) == {"facts", "observations", "formatted", "time_range"}
    assert "Mr. Brandt" in inspect["formatted"]


async def test_supersession_keeps_history(app: Any, client: httpx.AsyncClient) -> None:
    old = await _add(client, "I live in Berlin")
    new = await _add(client, "I moved to Hamburg in June")
    await _memory(app).supersede(old["id"], new["id"], "contradicted by a newer fact")
    kept = (await client.get(f"/facts/{old['id']}")).json()
    assert kept["fact"]["archived_at"] is not None
    assert kept["fact"]["superseded_by"] == new["id"]
    assert kept["fact"]["provenance"]["superseded"]["by"] == new["id"]
    assert {f["id"] for f in kept["linked_facts"]} == {new["id"]}
    active = (await client.get("/facts")).json()
    assert [f["id"] for f in active["facts"]] == [new["id"]]
    archived = (await client.get("/facts", params={"archived": True})).json()
    assert [f["id"] for f in archived["facts"]] == [old["id"]]
    assert old["id"] not in await _recalled(client, "Which city do I live in? Berlin")
    links = (await client.get(f"/facts/{new['id']}")).json()["linked_facts"]
    assert links[0]["link_type"] == "supersedes"


async def test_observations_endpoints(app: Any, client: httpx.AsyncClient) -> None:
    a = await _add(client, "I run every Tuesday")
    b = await _add(client, "I run every Saturday")
    obs = await _memory(app).add_observation("Runs twice a week", [a["id"], b["id"]])
    listing = (await client.get("/observations")).json()
    assert listing["total"] == 1 and listing["observations"][0]["evidence_count"] == 2
    detail = (await client.get(f"/observations/{obs.id}")).json()
    assert {f["id"] for f in detail["supporting_facts"]} == {a["id"], b["id"]}
    r = await client.patch(f"/observations/{obs.id}", json={"summary": "A keen runner"})
    assert r.json()["observation"]["summary"] == "A keen runner"
    inspect = (await client.post("/memory/recall/inspect", json={"query": "keen runner"})).json()
    assert [o["id"] for o in inspect["observations"]] == [obs.id]
    assert (await client.patch("/observations/99", json={"summary": "x"})).status_code == 404
    assert (await client.patch(f"/observations/{obs.id}", json={})).status_code == 422
    assert (await client.delete(f"/observations/{obs.id}")).json()["status"] == "deleted"
    assert (await client.get(f"/observations/{obs.id}")).status_code == 404
    assert (await client.delete(f"/observations/{obs.id}")).status_code == 404


async def test_profile_endpoints(client: httpx.AsyncClient) -> None:
    fact = await _add(client, "I am vegetarian")
    r = await client.post(
        "/memory/profile",
        json={
            "kind": "diet",
            "summary": "Vegetarian",
            "source_fact_ids": [fact["id"]],
            "confidence": 0.9,
        },
    )
    assert r.status_code == 201, r.text
    entry = r.json()["entry"]
    assert entry["source_fact_ids"] == [fact["id"]] and entry["confidence"] == 0.9
    detail = (await client.get(f"/memory/profile/{entry['id']}")).json()
    assert set(detail) == {"entry", "source_facts", "source_observations"}
    assert detail["source_facts"][0]["text"] == "I am vegetarian"
    r = await client.patch(f"/memory/profile/{entry['id']}", json={"summary": "Vegan"})
    assert r.json()["entry"]["summary"] == "Vegan"
    inspect = (await client.post("/memory/recall/inspect", json={"query": "anything"})).json()
    assert "Vegan" in inspect["formatted"]  # the profile is always there
    assert (
        await client.post(
            "/memory/profile", json={"kind": "x", "summary": "y", "source_fact_ids": [999]}
        )
    ).status_code == 422
    assert (await client.post("/memory/profile", json={"kind": "x"})).status_code == 422
    assert (await client.get("/memory/profile/999")).status_code == 404
    assert (await client.patch("/memory/profile/999", json={"summary": "x"})).status_code == 404
    r = await client.delete(f"/memory/profile/{entry['id']}")
    assert r.json() == {"status": "archived", "entry_id": entry["id"]}
    assert (await client.get("/memory/profile")).json() == {"entries": []}
    archived = (await client.get("/memory/profile", params={"archived": True})).json()
    assert archived["entries"][0]["archived_at"] is not None
    assert (await client.delete("/memory/profile/999")).status_code == 404


async def test_dreams_endpoints(app: Any, client: httpx.AsyncClient) -> None:
    a = await _add(client, "I love sailing")
    b = await _add(client, "My colleague Rui grew up in the Azores")
    dream = await _memory(app).stores.profile.insert_dream(
        "the sea", "Ask Rui about sailing", [a["id"], b["id"]]
    )
    listing = (await client.get("/dreams")).json()
    assert listing["dreams"][0]["id"] == dream.id and listing["total"] == 1
    detail = (await client.get(f"/dreams/{dream.id}")).json()
    assert detail["dream"]["bridge"] == "the sea" and len(detail["source_facts"]) == 2
    assert (await client.delete(f"/dreams/{dream.id}")).json()["status"] == "deleted"
    assert (await client.get(f"/dreams/{dream.id}")).status_code == 404
    assert (await client.delete(f"/dreams/{dream.id}")).status_code == 404


async def test_clear_removes_everything(client: httpx.AsyncClient) -> None:
    for t in FACTS:
        await _add(client, t)
    await client.post("/memory/profile", json={"kind": "k", "summary": "s"})
    r = (await client.post("/memory/clear")).json()
    assert r["status"] == "cleared"
    assert r["deleted"]["facts"] == 4 and r["deleted"]["profile"] == 1
    assert (await client.get("/stats")).json()["fact_count"] == 0
    assert await _recalled(client, "dentist") == []


async def test_memory_needs_the_key(anon: httpx.AsyncClient) -> None:
    for path in ("/facts", "/stats", "/memory/audit", "/models/embedding"):
        assert (await anon.get(path)).status_code == 401


async def test_deleting_a_source_fact_leaves_no_dangling_id(client: httpx.AsyncClient) -> None:
    a = (await client.post("/facts", json={"text": "Lives in Lyon"})).json()["fact"]["id"]
    b = (await client.post("/facts", json={"text": "Works at the library"})).json()["fact"]["id"]
    entry = (
        await client.post(
            "/memory/profile",
            json={"kind": "home", "summary": "Lyon librarian", "source_fact_ids": [a, b]},
        )
    ).json()["entry"]
    assert (await client.delete(f"/facts/{a}")).status_code == 200
    detail = (await client.get(f"/memory/profile/{entry['id']}")).json()
    assert detail["entry"]["source_fact_ids"] == [b]
    assert [f["id"] for f in detail["source_facts"]] == [b]


async def test_null_in_a_patch_is_named(client: httpx.AsyncClient) -> None:
    fid = (await client.post("/facts", json={"text": "Likes tea"})).json()["fact"]["id"]
    r = await client.patch(f"/facts/{fid}", json={"kind": None})
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "kind"]
    assert "null" in r.json()["detail"]
    r = await client.patch(f"/facts/{fid}", json={})
    assert r.status_code == 422 and "at least one field" in r.json()["detail"]


async def test_bulk_import_embeds_in_batches(app: Any, client: httpx.AsyncClient) -> None:
    existing = (await client.post("/facts", json={"text": "The boat is called Wren"})).json()
    facts = [{"text": f"Import {n}: the key for box {n} is on hook {n}"} for n in range(150)]
    facts += [
        {"text": "The boat is called Wren"},
        {"text": "Import 3: the key for box 3 is on hook 3"},
    ]
    facts.append({"text": "Prefers window seats", "kind": "preference"})
    embedder = app.state.container.memory.service.space.embedder
    calls: list[int] = []
    real = embedder.embed

    async def counting(texts: Any) -> Any:
        calls.append(len(texts))
        return await real(texts)

    embedder.embed = counting
    r = await client.post("/facts/import", json={"facts": facts})
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["imported"] == 151 and body["skipped"] == 2 and len(body["fact_ids"]) == 151
    assert calls == [64, 64, 23]  # batches, not one model call per fact
    assert existing["fact"]["id"] not in body["fact_ids"]
    last = (await client.get(f"/facts/{body['fact_ids'][-1]}")).json()["fact"]
    assert last["kind"] == "preference" and last["source_type"] == "manual"
    hits = (await client.post("/memory/recall/inspect", json={"query": "key for box 42"})).json()
    assert "box 42" in hits["facts"][0]["text"]
    assert (await client.get("/memory/audit")).json()["ok"] is True


async def test_bulk_import_limits(client: httpx.AsyncClient) -> None:
    assert (await client.post("/facts/import", json={"facts": []})).status_code == 422
    many = [{"text": f"fact {n}"} for n in range(5001)]
    r = await client.post("/facts/import", json={"facts": many})
    assert r.status_code == 422 and r.json()["errors"][0]["loc"][:2] == ["body", "facts"]


async def test_small_talk_recalls_no_unrelated_fact(client: httpx.AsyncClient) -> None:
    for text in FACTS:
        await _add(client, text)
    assert await _recalled(client, "hello") == []
    assert await _recalled(client, "thanks!") == []
    assert await _recalled(client, "who looks after my teeth?") != []
