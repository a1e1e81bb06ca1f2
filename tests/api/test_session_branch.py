"""POST /sessions/{id}/branch: a new session from a copy of the history."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from tests.support.chat_models import events_until, install_model, scripted
from tests.support.sessions import new_session

from famulus.agent.history import effective

ITEM_FIELDS = {
    "session_id",
    "name",
    "sources",
    "started_at",
    "last_activity",
    "message_count",
    "archived_at",
}


async def _chat(app: Any, client: httpx.AsyncClient, sid: str, text: str) -> None:
    before = await app.state.container.events.store.last_seq(sid)
    r = await client.post("/chat/message", json={"message": text, "session_id": sid})
    assert r.status_code == 202, r.text
    await events_until(app, sid, "run_finished", after=before)


async def _history(client: httpx.AsyncClient, sid: str) -> list[dict[str, Any]]:
    r = await client.get("/session/history", params={"session_id": sid})
    assert r.status_code == 200, r.text
    messages: list[dict[str, Any]] = r.json()["messages"]
    return messages


def _without_ids(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in m.items() if k != "id"} for m in messages]


async def test_branch_copies_the_whole_history_by_default(
    app: Any, client: httpx.AsyncClient
) -> None:
    install_model(app, scripted(("tool", "current_time", "{}"), "It is late"))
    sid = await new_session(client, name="Plans")
    await _chat(app, client, sid, "what time is it?")
    original = await _history(client, sid)
    original_events = await app.state.container.events.replay(sid, 0)

    r = await client.post(f"/sessions/{sid}/branch")
    assert r.status_code == 201, r.text
    item = r.json()
    assert set(item) == ITEM_FIELDS
    new = item["session_id"]
    assert new != sid and item["name"] == "Plans (branch)"
    assert item["message_count"] == 3 and item["archived_at"] is None and item["sources"] == []

    copy = await _history(client, new)
    assert _without_ids(copy) == _without_ids(original)
    assert not {m["id"] for m in copy} & {m["id"] for m in original}
    assert copy[1]["tool_calls"][0]["id"] == copy[2]["tool_call_id"]
    assert await _history(client, sid) == original  # the original is untouched
    assert await app.state.container.events.replay(sid, 0) == original_events
    assert await app.state.container.events.replay(new, 0) == []  # its log starts empty
    listed = {s["session_id"] for s in (await client.get("/sessions")).json()["sessions"]}
    assert {sid, new} <= listed


async def test_branch_at_a_message_with_a_name_and_chat_on(
    app: Any, client: httpx.AsyncClient
) -> None:
    seen: list[str] = []

    def answer(messages: list[Any]) -> str:
        seen.append(repr(messages))
        return "Noted"

    install_model(app, scripted(answer))
    sid = await new_session(client)
    await _chat(app, client, sid, "my cat is called Tom")
    await _chat(app, client, sid, "my dog is called Rex")
    original = await _history(client, sid)

    r = await client.post(
        f"/sessions/{sid}/branch", json={"message_id": original[1]["id"], "name": "Cats only"}
    )
    assert r.status_code == 201, r.text
    new = r.json()["session_id"]
    assert r.json()["name"] == "Cats only" and r.json()["message_count"] == 2
    assert _without_ids(await _history(client, new)) == _without_ids(original[:2])

    seen.clear()
    await _chat(app, client, new, "what pets do I have?")
    assert "Tom" in seen[0] and "Rex" not in seen[0]
    assert await _history(client, sid) == original
    assert len(await _history(client, new)) == 4


async def test_branch_errors(app: Any, client: httpx.AsyncClient) -> None:
    r = await client.post("/sessions/s_nope/branch")
    assert r.status_code == 404 and r.json()["code"] == "not_found"
    install_model(app, scripted("ok"))
    sid = await new_session(client)
    other = await new_session(client)
    await _chat(app, client, sid, "hello")
    await _chat(app, client, other, "elsewhere")
    foreign = (await _history(client, other))[0]["id"]
    mine = await _history(client, sid)
    for message_id in (foreign, mine[-1]["id"] + 1000):
        r = await client.post(f"/sessions/{sid}/branch", json={"message_id": message_id})
        assert r.status_code == 404, r.text
        assert r.json()["code"] == "not_found" and str(message_id) in r.json()["detail"]
    for bad in (
        {"message_id": 0},
        {"message_id": "1"},
        {"message_id": 2**63},
        {"name": ""},
        {"name": "a\nb"},
        {"name": "x" * 201},
        {"names": "x"},
    ):
        r = await client.post(f"/sessions/{sid}/branch", json=bad)
        assert r.status_code == 422, (bad, r.text)
        assert r.json()["errors"]
    sessions = (await client.get("/sessions", params={"origin": "all"})).json()["sessions"]
    assert len(sessions) == 2  # no failed branch left a session behind


async def test_branch_of_an_archived_session_is_active(app: Any, client: httpx.AsyncClient) -> None:
    install_model(app, scripted("ok"))
    sid = await new_session(client, name="x" * 200)
    await _chat(app, client, sid, "hello")
    await client.delete(f"/sessions/{sid}")
    r = await client.post(f"/sessions/{sid}/branch", json={})
    assert r.status_code == 201, r.text
    assert r.json()["archived_at"] is None
    assert r.json()["name"] == "x" * 191 + " (branch)"


async def _row(app: Any, sid: str, role: str, text: str, **kw: Any) -> int:
    row = await app.state.container.sessions.store.add_message(sid, role, text, **kw)
    return int(row.id)


async def test_summaries_are_copied_when_they_fold_copied_rows(
    app: Any, client: httpx.AsyncClient
) -> None:
    store = app.state.container.sessions.store
    elsewhere = await _row(app, await new_session(client), "user", "not in this session")
    sid = await new_session(client)
    u1 = await _row(app, sid, "user", "turn 1")
    a1 = await _row(app, sid, "assistant", "answer 1")
    await _row(app, sid, "user", "turn 2")
    a2 = await _row(app, sid, "assistant", "answer 2")
    await _row(app, sid, "summary", "S1", meta={"through_id": a1, "folded": 2})
    await _row(app, sid, "user", "turn 3")
    await _row(app, sid, "summary", "S2", meta={"through_id": a2, "folded": 4})
    # Void: the last row it folds is not in the session (as when a revert removed
    # it while the summary was being written).
    await _row(app, sid, "summary", "void", meta={"through_id": elsewhere})

    r = await client.post(f"/sessions/{sid}/branch", json={"message_id": a2})
    assert r.status_code == 201, r.text
    rows = await store.messages(r.json()["session_id"])
    assert [x.content for x in rows] == ["turn 1", "answer 1", "turn 2", "answer 2", "S1", "S2"]
    assert all(x.run_id is None for x in rows)
    by_content = {x.content: x for x in rows}
    assert by_content["S1"].meta == {"through_id": by_content["answer 1"].id, "folded": 2}
    assert by_content["S2"].meta["through_id"] == by_content["answer 2"].id
    seen = effective(rows)
    assert seen.summary == "S2" and seen.rows == []

    r = await client.post(f"/sessions/{sid}/branch", json={"message_id": u1})
    rows = await store.messages(r.json()["session_id"])
    assert [x.content for x in rows] == ["turn 1"]  # both summaries fold later rows
    # A summary's own id is not a message a client can name (history never shows it).
    summaries = [x for x in await store.messages(sid) if x.role == "summary"]
    r = await client.post(f"/sessions/{sid}/branch", json={"message_id": summaries[0].id})
    assert r.status_code == 404, r.text


async def test_branch_racing_a_run_and_a_delete_never_500s(
    app: Any, client: httpx.AsyncClient
) -> None:
    install_model(app, scripted(("tool", "current_time", "{}"), "done", delay=0.01))
    for n in range(6):
        sid = await new_session(client)
        await client.post("/chat/message", json={"message": f"go {n}", "session_id": sid})
        answers = await asyncio.gather(
            client.post(f"/sessions/{sid}/branch"),
            client.post(f"/sessions/{sid}/branch"),
            client.delete(f"/sessions/{sid}/permanent"),
            client.post(f"/sessions/{sid}/branch"),
        )
        for r in answers:
            assert r.status_code in (200, 201, 404), r.text
        for r in answers:
            if r.status_code == 201:
                copy = await _history(client, r.json()["session_id"])
                assert copy and copy[0]["content"] == f"go {n}"


async def test_memory_does_not_read_a_branch_copy_as_new(
    app: Any, client: httpx.AsyncClient
) -> None:
    """Every copied message was (or will be) read by memory in the original, so
    the branch starts with its extraction mark at its last copied message."""
    install_model(app, scripted("ok"))
    sid = await new_session(client)
    await _chat(app, client, sid, "my cat is called Tom")
    marks = app.state.container.memory.service.stores.extraction
    r = await client.post(f"/sessions/{sid}/branch")
    new = r.json()["session_id"]
    copy = await _history(client, new)
    assert await marks.mark(new) == copy[-1]["id"]
    assert new not in await marks.sessions_past_mark()
