"""The ten session endpoints, their bodies and their rules (API.md, Sessions)."""

from __future__ import annotations

import httpx
import pytest

from famulus.errors import Conflict


async def _create(client: httpx.AsyncClient, name: str = "s") -> dict:
    r = await client.post("/sessions", json={"name": name})
    assert r.status_code == 201, r.text
    return r.json()


async def test_create_returns_list_item(client: httpx.AsyncClient) -> None:
    item = await _create(client, "Trip planning")
    assert set(item) == {
        "session_id",
        "name",
        "sources",
        "started_at",
        "last_activity",
        "message_count",
        "archived_at",
    }
    assert item["name"] == "Trip planning"
    assert item["sources"] == [] and item["message_count"] == 0 and item["archived_at"] is None
    assert item["started_at"].endswith("Z")


async def test_create_without_body_gets_default_name(client: httpx.AsyncClient) -> None:
    r = await client.post("/sessions")
    assert r.status_code == 201
    assert r.json()["name"] == "New session"


async def test_get_session_has_exactly_three_fields(client: httpx.AsyncClient) -> None:
    r = await client.get("/session")
    assert r.status_code == 200
    body = r.json()
    assert set(body) == {"session_id", "name", "sources"}
    # The same session comes back while it is the most recent one.
    assert (await client.get("/session")).json()["session_id"] == body["session_id"]
    newer = await _create(client, "newer")
    assert (await client.get("/session")).json()["session_id"] == newer["session_id"]
    r = await client.get("/session", params={"session_id": body["session_id"]})
    assert r.json()["session_id"] == body["session_id"]


async def test_get_session_unknown_id_is_404(client: httpx.AsyncClient) -> None:
    r = await client.get("/session", params={"session_id": "nope"})
    assert r.status_code == 404
    assert r.json()["code"] == "not_found"


async def test_list_returns_twenty_most_recent_active(client: httpx.AsyncClient) -> None:
    ids = [(await _create(client, f"n{i}"))["session_id"] for i in range(23)]
    await client.delete(f"/sessions/{ids[-1]}")
    r = await client.get("/sessions")
    listed = [s["session_id"] for s in r.json()["sessions"]]
    assert len(listed) == 20
    assert listed == list(reversed(ids[:-1]))[:20]


async def test_rename(client: httpx.AsyncClient) -> None:
    sid = (await _create(client))["session_id"]
    r = await client.patch(f"/sessions/{sid}", json={"name": "Renamed"})
    assert r.status_code == 200 and r.json()["name"] == "Renamed"
    assert (await client.get("/session", params={"session_id": sid})).json()["name"] == "Renamed"


@pytest.mark.parametrize(
    "body", [{}, {"name": ""}, {"name": "x" * 201}, {"name": 5}, {"name": "a", "x": 1}]
)
async def test_rename_rejects_bad_bodies(client: httpx.AsyncClient, body: dict) -> None:
    sid = (await _create(client))["session_id"]
    r = await client.patch(f"/sessions/{sid}", json=body)
    assert r.status_code == 422
    assert r.json()["code"] == "invalid_request" and r.json()["errors"]


@pytest.mark.parametrize("name", ["two\nlines", "cr\rlf", "tab\there", "c1\x9b"])
async def test_names_with_control_characters_are_422(client: httpx.AsyncClient, name: str) -> None:
    r = await client.post("/sessions", json={"name": name})
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "name"]
    sid = (await _create(client))["session_id"]
    r = await client.patch(f"/sessions/{sid}", json={"name": name})
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "name"]


async def test_rename_unknown_is_404(client: httpx.AsyncClient) -> None:
    r = await client.patch("/sessions/missing", json={"name": "x"})
    assert r.status_code == 404


async def test_archive_restore_cycle(client: httpx.AsyncClient) -> None:
    sid = (await _create(client))["session_id"]
    r = await client.delete(f"/sessions/{sid}")
    assert r.json() == {"status": "archived", "session_id": sid}
    # archiving again is a no-op 200
    assert (await client.delete(f"/sessions/{sid}")).status_code == 200
    active = [s["session_id"] for s in (await client.get("/sessions")).json()["sessions"]]
    archived = (await client.get("/sessions/archived")).json()["sessions"]
    assert sid not in active
    assert [s["session_id"] for s in archived] == [sid] and archived[0]["archived_at"]
    r = await client.post(f"/sessions/{sid}/restore")
    assert r.json() == {"status": "restored", "session_id": sid}
    assert (await client.get("/sessions/archived")).json()["sessions"] == []
    assert sid in [s["session_id"] for s in (await client.get("/sessions")).json()["sessions"]]


async def test_permanent_delete_from_any_state(client: httpx.AsyncClient) -> None:
    a = (await _create(client))["session_id"]
    b = (await _create(client))["session_id"]
    await client.delete(f"/sessions/{b}")
    for sid in (a, b):
        r = await client.delete(f"/sessions/{sid}/permanent")
        assert r.json() == {"status": "deleted", "session_id": sid}
        assert (await client.get("/session", params={"session_id": sid})).status_code == 404
        assert (await client.delete(f"/sessions/{sid}/permanent")).status_code == 404


async def test_unknown_ids_are_404(client: httpx.AsyncClient) -> None:
    for method, path in [
        ("DELETE", "/sessions/x"),
        ("POST", "/sessions/x/restore"),
        ("DELETE", "/sessions/x/permanent"),
        ("GET", "/session/history?session_id=x"),
    ]:
        r = await client.request(method, path)
        assert r.status_code == 404, (method, path)
        assert r.json()["code"] == "not_found"


async def test_history_and_clear(app, client: httpx.AsyncClient) -> None:
    sid = (await _create(client))["session_id"]
    store = app.state.container.sessions.store
    await store.add_message(sid, "user", "hello")
    await store.add_message(
        sid, "assistant", "", tool_calls=[{"id": "t1", "name": "now", "arguments": {}}]
    )
    await store.add_message(sid, "tool", "12:00", tool_call_id="t1", tool_name="now")
    await store.add_message(sid, "assistant", "It is noon.")
    r = await client.get("/session/history", params={"session_id": sid})
    body = r.json()
    assert body["session_id"] == sid
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert body["messages"][1]["tool_calls"] == [{"id": "t1", "name": "now", "arguments": {}}]
    assert body["messages"][2]["tool_call_id"] == "t1"
    item = next(
        s for s in (await client.get("/sessions")).json()["sessions"] if s["session_id"] == sid
    )
    assert item["message_count"] == 3
    r = await client.post("/session/clear", json={"session_id": sid})
    assert r.json() == {"status": "cleared", "session_id": sid}
    assert (await client.get("/session/history", params={"session_id": sid})).json()[
        "messages"
    ] == []
    assert (await client.get("/session", params={"session_id": sid})).status_code == 200


async def test_clear_without_body_clears_current(client: httpx.AsyncClient) -> None:
    sid = (await _create(client))["session_id"]
    r = await client.post("/session/clear")
    assert r.json() == {"status": "cleared", "session_id": sid}


async def test_history_defaults_to_current(client: httpx.AsyncClient) -> None:
    sid = (await _create(client))["session_id"]
    r = await client.get("/session/history")
    assert r.json() == {"session_id": sid, "messages": []}


async def test_list_takes_limit_and_offset(client: httpx.AsyncClient) -> None:
    ids = [(await _create(client, f"n{i}"))["session_id"] for i in range(5)]
    newest_first = list(reversed(ids))
    r = await client.get("/sessions", params={"limit": 3})
    assert [s["session_id"] for s in r.json()["sessions"]] == newest_first[:3]
    r = await client.get("/sessions", params={"limit": 3, "offset": 3})
    assert [s["session_id"] for s in r.json()["sessions"]] == newest_first[3:5]
    r = await client.get("/sessions", params={"offset": 5})
    assert r.json()["sessions"] == []


@pytest.mark.parametrize(
    "params",
    [{"limit": 0}, {"limit": 21}, {"limit": "x"}, {"offset": -1}, {"origin": "robot"}],
)
async def test_list_rejects_bad_query(client: httpx.AsyncClient, params: dict) -> None:
    r = await client.get("/sessions", params=params)
    assert r.status_code == 422, r.text
    assert r.json()["code"] == "invalid_request"


async def test_long_unknown_id_is_truncated_in_detail(client: httpx.AsyncClient) -> None:
    long_id = "x" * 5000
    for method, path, kw in [
        ("GET", "/session", {"params": {"session_id": long_id}}),
        ("GET", "/session/history", {"params": {"session_id": long_id}}),
        ("DELETE", f"/sessions/{long_id}", {}),
    ]:
        r = await client.request(method, path, **kw)
        assert r.status_code == 404, (method, path)
        detail = r.json()["detail"]
        assert "x" * 63 + "…" in detail and "x" * 65 not in detail
        assert len(detail) < 200
    # short ids are quoted whole
    r = await client.get("/session", params={"session_id": "abc"})
    assert "'abc'" in r.json()["detail"]


async def test_archived_session_conflict_truncates_id(app, client: httpx.AsyncClient) -> None:
    store = app.state.container.sessions.store
    long_id = "y" * 300
    await store.create(long_id, "long")
    await client.delete(f"/sessions/{long_id}")
    with pytest.raises(Conflict) as info:
        await app.state.container.sessions.get_active(long_id)
    message = str(info.value)
    assert "y" * 63 + "…" in message and "y" * 65 not in message


async def test_automation_sessions_stay_out_of_the_default_and_the_list(
    app, client: httpx.AsyncClient
) -> None:
    sessions = app.state.container.sessions
    chat = await _create(client, "mine")
    auto = await sessions.create("Automation: brief", origin="automation")
    await sessions.store.add_message(auto.session_id, "assistant", "automation output")
    # the automation session is newer, yet the default stays the chat session
    assert (await client.get("/session")).json()["session_id"] == chat["session_id"]
    assert (await client.get("/session/history")).json()["session_id"] == chat["session_id"]
    r = await client.post("/session/clear")
    assert r.json()["session_id"] == chat["session_id"]
    assert len(await sessions.store.messages(auto.session_id)) == 1

    def ids(r: httpx.Response) -> list[str]:
        return [s["session_id"] for s in r.json()["sessions"]]

    assert ids(await client.get("/sessions")) == [chat["session_id"]]
    assert ids(await client.get("/sessions", params={"origin": "chat"})) == [chat["session_id"]]
    assert ids(await client.get("/sessions", params={"origin": "automation"})) == [auto.session_id]
    # clearing touched the chat session, so it is the most recent of all
    assert ids(await client.get("/sessions", params={"origin": "all"})) == [
        chat["session_id"],
        auto.session_id,
    ]
    # reachable by id everywhere
    r = await client.get("/session", params={"session_id": auto.session_id})
    assert r.json()["name"] == "Automation: brief"
    r = await client.get("/session/history", params={"session_id": auto.session_id})
    assert [m["content"] for m in r.json()["messages"]] == ["automation output"]
    assert (await client.delete(f"/sessions/{auto.session_id}")).status_code == 200
    archived = await client.get("/sessions/archived", params={"origin": "automation"})
    assert ids(archived) == [auto.session_id]
    assert ids(await client.get("/sessions/archived")) == []
    assert (await client.post(f"/sessions/{auto.session_id}/restore")).status_code == 200
    r = await client.delete(f"/sessions/{auto.session_id}/permanent")
    assert r.json() == {"status": "deleted", "session_id": auto.session_id}


async def test_default_is_created_when_only_automation_sessions_exist(
    app, client: httpx.AsyncClient
) -> None:
    auto = await app.state.container.sessions.create("Automation: x", origin="automation")
    body = (await client.get("/session")).json()
    assert body["session_id"] != auto.session_id and body["name"] == "New session"
    assert (await client.get("/session")).json()["session_id"] == body["session_id"]
