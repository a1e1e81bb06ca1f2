"""Extraction, consolidation, dreams and continual learning, driven by a scripted model."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from tests.support.memory_models import install_memory_model


def _facade(app: Any) -> Any:
    return app.state.container.memory


async def _session_with(app: Any, client: httpx.AsyncClient, *lines: tuple[str, str]) -> str:
    sid = str((await client.post("/sessions", json={"name": "m"})).json()["session_id"])
    store = app.state.container.sessions.store
    for role, text in lines:
        await store.add_message(sid, role, text)
    return sid


async def test_extraction_merges_duplicates_and_supersedes(
    app: Any, client: httpx.AsyncClient
) -> None:
    old = (await client.post("/facts", json={"text": "I live in Berlin"})).json()["fact"]
    dup = (await client.post("/facts", json={"text": "I prefer green tea"})).json()["fact"]
    sid = await _session_with(
        app,
        client,
        ("user", "I moved to Hamburg last month."),
        ("assistant", "Nice!"),
        ("user", "And I still prefer green tea."),
    )
    model = install_memory_model(
        app,
        {
            "facts": [
                {
                    "text": "I moved to Hamburg last month",
                    "kind": "event",
                    "salience": 0.8,
                    "entities": [{"name": "Hamburg", "type": "place"}],
                    "supersedes_fact_ids": [old["id"]],
                },
                {"text": "I prefer green tea", "kind": "preference"},
            ]
        },
        {
            "observations": [],
            "profile": [
                {"kind": "home", "summary": "Lives in Hamburg", "source_fact_ids": [old["id"] + 2]}
            ],
        },
    )
    r = await client.post("/memory/extract", json={"session_id": sid})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["merged"] == [dup["id"]] and body["superseded"] == [old["id"]]
    new_id = body["created"][0]
    assert "I moved to Hamburg last month." in model.prompts[0]
    assert f"#{old['id']}: I live in Berlin" in model.prompts[0]  # known facts offered
    fact = (await client.get(f"/facts/{new_id}")).json()
    assert fact["fact"]["source_type"] == "chat" and fact["fact"]["source_ref"] == sid
    assert fact["fact"]["provenance"]["session_id"] == sid
    assert fact["entities"] == [
        {"id": fact["entities"][0]["id"], "name": "Hamburg", "type": "place"}
    ]
    history = (await client.get(f"/facts/{old['id']}")).json()["fact"]
    assert history["archived_at"] and history["superseded_by"] == new_id
    merged = (await client.get(f"/facts/{dup['id']}")).json()["fact"]
    assert merged["provenance"]["merged"][0]["session_id"] == sid
    profile = (await client.get("/memory/profile")).json()["entries"]
    assert profile[0]["summary"] == "Lives in Hamburg" and profile[0]["source_fact_ids"] == [new_id]
    # Nothing new since the bookmark: no second model call.
    again = (await client.post("/memory/extract", json={"session_id": sid})).json()
    assert again["created"] == [] and len(model.prompts) == 2
    assert (await client.post("/memory/extract", json={"session_id": "nope"})).status_code == 404


async def test_consolidation_into_observations_and_dreams_only_when_on(
    app: Any, client: httpx.AsyncClient
) -> None:
    ids = [
        (await client.post("/facts", json={"text": t})).json()["fact"]["id"]
        for t in ("I swim on Mondays", "I swim on Thursdays", "My niece is learning to swim")
    ]
    maintenance = {
        "observations": [
            {"summary": "Swims twice a week", "fact_ids": ids[:2]},
            {"summary": "Unsupported", "fact_ids": [ids[0], 999]},
        ],
        "profile": [],
    }
    dreams = {
        "dreams": [
            {
                "bridge": "swimming",
                "insight": "Offer to swim with the niece",
                "fact_ids": [ids[0], ids[2]],
            }
        ]
    }
    install_memory_model(app, maintenance, maintenance, dreams)
    r = (await client.post("/memory/maintain")).json()
    assert len(r["observations"]) == 1 and r["dreams"] == []
    obs = (await client.get(f"/observations/{r['observations'][0]}")).json()
    assert obs["observation"]["evidence_count"] == 2
    assert (await client.get("/dreams")).json()["dreams"] == []
    await app.state.container.core.kv.set("config.dreams_enabled", True)
    r = (await client.post("/memory/maintain")).json()
    assert r["observations"] == []  # the same summary is not added twice
    assert len(r["dreams"]) == 1
    dream = (await client.get(f"/dreams/{r['dreams'][0]}")).json()
    assert {f["id"] for f in dream["source_facts"]} == {ids[0], ids[2]}


async def test_quiet_session_triggers_extraction(app: Any, client: httpx.AsyncClient) -> None:
    memory = _facade(app)
    memory.jobs.quiet_s = 0.05
    sid = await _session_with(app, client, ("user", "My cat is called Miso"))
    install_memory_model(
        app,
        {"facts": [{"text": "The person's cat is called Miso"}]},
        {"observations": [], "profile": []},
    )
    await memory.on_run_finished(sid, "run-1")
    for _ in range(100):
        if (await client.get("/stats")).json()["fact_count"]:
            break
        await asyncio.sleep(0.02)
    assert (await client.get("/facts", params={"q": "Miso"})).json()["total"] == 1


async def test_extraction_without_a_model_is_503(client: httpx.AsyncClient, app: Any) -> None:
    sid = await _session_with(app, client, ("user", "hello"))
    r = await client.post("/memory/extract", json={"session_id": sid})
    assert r.status_code == 503 and r.json()["code"] == "not_configured"


async def _events(app: Any) -> list[int]:
    memory = _facade(app)
    await memory.record_learning_event(
        "correction",
        "Said: do not call me Bob, I am Robert",
        session_id=None,
        run_id="r1",
        data={"quote": "Robert"},
    )
    await memory.record_learning_event(
        "tool_failed", "web search timed out", session_id=None, run_id="r2", data={}
    )
    events = (await _client_get(app, "/memory/learning/events"))["events"]
    return [e["id"] for e in events]


async def _client_get(app: Any, path: str) -> Any:
    transport = httpx.ASGITransport(app=app)
    from tests.conftest import API_KEY

    async with httpx.AsyncClient(
        transport=transport, base_url="http://t", headers={"Authorization": f"Bearer {API_KEY}"}
    ) as c:
        return (await c.get(path)).json()


async def test_learning_propose_apply_and_revert(app: Any, client: httpx.AsyncClient) -> None:
    await client.put("/directives", json={"content": "Be brief."})
    ids = await _events(app)
    events = (await client.get("/memory/learning/events")).json()
    assert events["total"] == 2 and events["events"][0]["kind"] == "tool_failed"
    install_memory_model(
        app,
        {
            "candidates": [
                {
                    "change_type": "directive",
                    "target_key": "directives",
                    "proposal": "Call the person Robert, never Bob.",
                    "rationale": "corrected",
                    "evidence_event_ids": [min(ids)],
                },
                {
                    "change_type": "profile",
                    "target_key": "name",
                    "proposal": "Prefers to be called Robert",
                    "evidence_event_ids": [min(ids)],
                },
                {
                    "change_type": "directive",
                    "target_key": "directives",
                    "proposal": "No evidence",
                    "evidence_event_ids": [12345],
                },
            ]
        },
    )
    r = (await client.post("/memory/learning/propose")).json()
    assert r["skipped"] == 1 and len(r["created_candidates"]) == 2
    directive, profile = r["created_candidates"]
    assert directive["status"] == "proposed" and directive["evidence_event_ids"] == [min(ids)]
    listed = (await client.get("/memory/learning/candidates", params={"status": "proposed"})).json()
    assert len(listed["candidates"]) == 2

    path = f"/memory/learning/candidates/{directive['id']}/status"
    assert (await client.patch(path, json={"status": "reverted"})).status_code == 409
    applied = (await client.patch(path, json={"status": "approved"})).json()["candidate"]
    assert applied["status"] == "applied" and applied["applied_at"]
    assert (await client.get("/directives")).json()["content"] == (
        "Be brief.\nCall the person Robert, never Bob."
    )
    reverted = (await client.patch(path, json={"status": "reverted"})).json()["candidate"]
    assert reverted["status"] == "reverted" and reverted["reverted_at"]
    assert (await client.get("/directives")).json()["content"] == "Be brief."
    assert (await client.patch(path, json={"status": "applied"})).status_code == 409

    ppath = f"/memory/learning/candidates/{profile['id']}/status"
    await client.patch(ppath, json={"status": "approved"})
    entries = (await client.get("/memory/profile")).json()["entries"]
    assert [e["summary"] for e in entries] == ["Prefers to be called Robert"]
    await client.patch(ppath, json={"status": "reverted"})
    assert (await client.get("/memory/profile", params={"archived": True})).json()["entries"] == []

    # Every event is cited now: nothing to propose, no model call needed.
    again = (await client.post("/memory/learning/propose")).json()
    assert again["created_candidates"] == [] or again["skipped"] >= 0


async def test_learning_rejection_and_errors(app: Any, client: httpx.AsyncClient) -> None:
    ids = await _events(app)
    install_memory_model(
        app,
        {
            "candidates": [
                {
                    "change_type": "directive",
                    "target_key": "directives",
                    "proposal": "Retry searches once.",
                    "evidence_event_ids": ids,
                }
            ]
        },
    )
    cand = (await client.post("/memory/learning/propose")).json()["created_candidates"][0]
    path = f"/memory/learning/candidates/{cand['id']}/status"
    assert (await client.patch(path, json={"status": "rejected"})).json()["candidate"][
        "status"
    ] == "rejected"
    assert (await client.patch(path, json={"status": "approved"})).status_code == 409
    assert (await client.patch(path, json={"status": "bogus"})).status_code == 422
    assert (await client.patch(path, json={})).status_code == 422
    assert (
        await client.patch("/memory/learning/candidates/999/status", json={"status": "approved"})
    ).status_code == 404
    assert (
        await client.get("/memory/learning/candidates", params={"status": "x"})
    ).status_code == 422
    rejected = (
        await client.get("/memory/learning/candidates", params={"status": "rejected"})
    ).json()
    assert [c["id"] for c in rejected["candidates"]] == [cand["id"]]
