"""POST /sessions/{id}/revert: the last turns leave the history the model sees."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from tests.support.chat_models import events_until, install_model, scripted, until_streaming
from tests.support.sessions import new_session

from famulus.agent.history import effective


async def _chat(app: Any, client: httpx.AsyncClient, sid: str, text: str, **extra: Any) -> None:
    """Send one message and wait until its run has finished."""
    before = await app.state.container.events.store.last_seq(sid)
    r = await client.post("/chat/message", json={"message": text, "session_id": sid, **extra})
    assert r.status_code == 202, r.text
    await events_until(app, sid, "run_finished", after=before)


async def _history(client: httpx.AsyncClient, sid: str) -> list[dict[str, Any]]:
    r = await client.get("/session/history", params={"session_id": sid})
    assert r.status_code == 200, r.text
    messages: list[dict[str, Any]] = r.json()["messages"]
    return messages


async def test_revert_removes_the_last_turn_and_returns_its_text(
    app: Any, client: httpx.AsyncClient
) -> None:
    seen: list[str] = []

    def answer(messages: list[Any]) -> str:
        seen.append(repr(messages))
        return "Sure"

    install_model(app, scripted(answer))
    sid = await new_session(client)
    await _chat(app, client, sid, "first question")
    await _chat(app, client, sid, "second question")
    before = await _history(client, sid)
    assert [m["role"] for m in before] == ["user", "assistant", "user", "assistant"]
    assert all(isinstance(m["id"], int) for m in before)
    assert [m["id"] for m in before] == sorted(m["id"] for m in before)

    r = await client.post(f"/sessions/{sid}/revert", json={"turns": 1})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body == {
        "status": "reverted",
        "session_id": sid,
        "turns": 1,
        "removed": before[2:],
        "text": "second question",
    }
    assert await _history(client, sid) == before[:2]
    item = next(
        s for s in (await client.get("/sessions")).json()["sessions"] if s["session_id"] == sid
    )
    assert item["message_count"] == 2

    events = await events_until(app, sid, "session_reverted")
    reverted = events[-1]
    assert reverted["type"] == "session_reverted" and reverted["session_id"] == sid
    assert reverted["turns"] == 1
    assert reverted["message_ids"] == [m["id"] for m in before[2:]]

    seen.clear()
    await _chat(app, client, sid, "third question")
    assert seen and "first question" in seen[0] and "second question" not in seen[0]


async def test_revert_takes_tool_rows_and_several_turns(
    app: Any, client: httpx.AsyncClient
) -> None:
    install_model(app, scripted(("tool", "current_time", "{}"), "It is late"))
    sid = await new_session(client)
    await _chat(app, client, sid, "what time is it?")
    install_model(app, scripted("Hello"))
    await _chat(app, client, sid, "hi")
    before = await _history(client, sid)
    assert [m["role"] for m in before] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]

    r = await client.post(f"/sessions/{sid}/revert", json={"turns": 2})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["turns"] == 2 and body["text"] == "what time is it?"
    assert [m["id"] for m in body["removed"]] == [m["id"] for m in before]
    assert body["removed"][1]["tool_calls"][0]["name"] == "current_time"
    assert await _history(client, sid) == []


async def test_more_turns_than_the_session_has_removes_them_all(
    app: Any, client: httpx.AsyncClient
) -> None:
    install_model(app, scripted("ok"))
    sid = await new_session(client)
    await _chat(app, client, sid, "one")
    await _chat(app, client, sid, "two")
    r = await client.post(f"/sessions/{sid}/revert", json={"turns": 5})
    assert r.status_code == 200, r.text
    assert r.json()["turns"] == 2 and r.json()["text"] == "one"
    assert await _history(client, sid) == []
    again = await client.post(f"/sessions/{sid}/revert")
    assert again.status_code == 409, again.text
    assert again.json()["code"] == "conflict" and "no turn" in again.json()["detail"]


async def test_default_is_one_turn_and_images_come_back(
    app: Any, client: httpx.AsyncClient
) -> None:
    install_model(app, scripted("A cat"), vision=True)
    sid = await new_session(client)
    await _chat(app, client, sid, "before")
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
    image = {"media_type": "image/png", "data": png}
    await _chat(app, client, sid, "what is this?", images=[image])
    for body in (None, {}):
        sent = {} if body is None else {"json": body}
        r = await client.post(f"/sessions/{sid}/revert", **sent)
        assert r.status_code == 200, r.text
        assert r.json()["turns"] == 1
        if body is None:
            assert r.json()["text"] == "what is this?" and r.json()["images"] == [image]
        else:
            assert r.json()["text"] == "before" and "images" not in r.json()
    assert await _history(client, sid) == []


async def test_revert_refused_while_a_run_is_active(app: Any, client: httpx.AsyncClient) -> None:
    install_model(app, scripted(" ".join(f"w{i}" for i in range(300)), delay=0.02))
    sid = await new_session(client)
    await client.post("/chat/message", json={"message": "long", "session_id": sid})
    await until_streaming(app, sid)
    r = await client.post(f"/sessions/{sid}/revert")
    assert r.status_code == 409, r.text
    assert r.json()["code"] == "conflict" and "POST /cancel" in r.json()["detail"]
    await client.post("/cancel", json={"session_id": sid})
    await events_until(app, sid, "run_cancelled")
    r = await client.post(f"/sessions/{sid}/revert")
    assert r.status_code == 200, r.text
    assert r.json()["text"] == "long"
    assert [m["role"] for m in r.json()["removed"]] == ["user", "assistant"]


async def test_revert_errors(app: Any, client: httpx.AsyncClient) -> None:
    r = await client.post("/sessions/s_nope/revert")
    assert r.status_code == 404 and r.json()["code"] == "not_found"
    sid = await new_session(client)
    for bad in (
        {"turns": 0},
        {"turns": -1},
        {"turns": 1.5},
        {"turns": "1"},
        {"turns": True},
        {"turns": 1001},
        {"turns": None},
        {"turn": 1},
    ):
        r = await client.post(f"/sessions/{sid}/revert", json=bad)
        assert r.status_code == 422, (bad, r.text)
        assert r.json()["code"] == "invalid_request" and r.json()["errors"]
    r = await client.post(f"/sessions/{sid}/revert")
    assert r.status_code == 409 and "no turn" in r.json()["detail"]
    install_model(app, scripted("ok"))
    await _chat(app, client, sid, "hello")
    assert (await client.delete(f"/sessions/{sid}")).status_code == 200
    r = await client.post(f"/sessions/{sid}/revert")
    assert r.status_code == 409 and "archived" in r.json()["detail"]
    assert len(await _history(client, sid)) == 2


async def _row(app: Any, sid: str, role: str, text: str, **kw: Any) -> int:
    row = await app.state.container.sessions.store.add_message(sid, role, text, **kw)
    return int(row.id)


async def test_summaries_that_fold_removed_rows_go_with_them(
    app: Any, client: httpx.AsyncClient
) -> None:
    """T1 T2 S1(folds T1) T3 S2(folds T1-T2) T4: reverting T3-T4 keeps both
    summaries (they fold kept rows only); reverting T2 drops S2, which folds it;
    reverting T1 drops S1."""
    store = app.state.container.sessions.store
    sid = await new_session(client)
    ids: dict[str, int] = {}
    for n in (1, 2):
        ids[f"u{n}"] = await _row(app, sid, "user", f"turn {n}")
        ids[f"a{n}"] = await _row(app, sid, "assistant", f"answer {n}")
    s1 = await _row(app, sid, "summary", "S1", meta={"through_id": ids["a1"]})
    ids["u3"] = await _row(app, sid, "user", "turn 3")
    ids["a3"] = await _row(app, sid, "assistant", "answer 3")
    s2 = await _row(app, sid, "summary", "S2", meta={"through_id": ids["a2"]})
    ids["u4"] = await _row(app, sid, "user", "turn 4")
    ids["a4"] = await _row(app, sid, "assistant", "answer 4")

    r = await client.post(f"/sessions/{sid}/revert", json={"turns": 2})
    assert r.status_code == 200, r.text
    assert [m["id"] for m in r.json()["removed"]] == [ids["u3"], ids["a3"], ids["u4"], ids["a4"]]
    rows = await store.messages(sid)
    assert [x.id for x in rows if x.role == "summary"] == [s1, s2]  # fold kept rows only
    seen = effective(rows)
    assert seen.summary == "S2" and seen.rows == []

    r = await client.post(f"/sessions/{sid}/revert")
    assert r.status_code == 200 and r.json()["text"] == "turn 2"
    rows = await store.messages(sid)
    assert [x.id for x in rows if x.role == "summary"] == [s1]  # S2 folded turn 2
    seen = effective(rows)
    assert seen.summary == "S1" and seen.rows == []
    assert "summary" not in [m["role"] for m in r.json()["removed"]]

    r = await client.post(f"/sessions/{sid}/revert")
    assert r.status_code == 200 and r.json()["text"] == "turn 1"
    rows = await store.messages(sid)
    assert rows == []
    assert effective(rows).summary is None


async def test_revert_racing_a_new_message_never_500s(app: Any, client: httpx.AsyncClient) -> None:
    """A revert and a message sent at once: the revert either goes first (200),
    finds the run (409), or finds nothing left to revert (409); never a 500, and
    the message the run answers stays in history."""
    install_model(app, scripted("ok"))
    sid = await new_session(client)
    statuses: list[int] = []
    for n in range(8):
        await _chat(app, client, sid, f"setup {n}")
        before = await app.state.container.events.store.last_seq(sid)
        revert, sent = await asyncio.gather(
            client.post(f"/sessions/{sid}/revert"),
            client.post("/chat/message", json={"message": f"race {n}", "session_id": sid}),
        )
        assert revert.status_code in (200, 409), revert.text
        assert sent.status_code == 202, sent.text
        statuses.append(revert.status_code)
        await events_until(app, sid, "run_finished", after=before)
        users = [m["content"] for m in await _history(client, sid) if m["role"] == "user"]
        assert users[-1] == f"race {n}", users
    assert 200 in statuses or 409 in statuses


async def test_revert_racing_a_permanent_delete_never_500s(
    app: Any, client: httpx.AsyncClient
) -> None:
    install_model(app, scripted("ok"))
    statuses: list[int] = []
    for _ in range(6):
        sid = await new_session(client)
        await _chat(app, client, sid, "hello")
        answers = await asyncio.gather(
            client.post(f"/sessions/{sid}/revert"),
            client.delete(f"/sessions/{sid}/permanent"),
            client.post(f"/sessions/{sid}/revert"),
        )
        for r in answers:
            assert r.status_code in (200, 404, 409), r.text
            assert r.status_code == 200 or r.json()["code"] in ("not_found", "conflict")
        statuses += [r.status_code for r in answers]
    assert 404 in statuses


async def test_a_summary_written_after_a_revert_removed_its_rows_is_void(
    app: Any, client: httpx.AsyncClient
) -> None:
    """POST /compact is summarizing when a revert removes the turns it folds:
    the summary lands afterwards, but the model never sees it."""
    from pydantic_ai.messages import ModelResponse, TextPart
    from pydantic_ai.models.function import FunctionModel

    asked, release = asyncio.Event(), asyncio.Event()

    async def summarizer(messages: list[Any], info: Any) -> ModelResponse:
        asked.set()
        await release.wait()
        return ModelResponse(parts=[TextPart("They talked about turns 1 to 3.")])

    install_model(app, FunctionModel(summarizer))
    sid = await new_session(client)
    for n in range(1, 6):
        await _row(app, sid, "user", f"turn {n}")
        await _row(app, sid, "assistant", f"answer {n}")
    compact = asyncio.create_task(client.post("/compact", json={"session_id": sid}))
    await asyncio.wait_for(asked.wait(), 10)
    r = await client.post(f"/sessions/{sid}/revert", json={"turns": 4})
    assert r.status_code == 200 and r.json()["text"] == "turn 2", r.text
    release.set()
    assert (await compact).status_code == 200
    rows = await app.state.container.sessions.store.messages(sid)
    assert [x.role for x in rows] == ["user", "assistant", "summary"]  # written, yet void
    seen = effective(rows)
    assert seen.summary is None and [x.content for x in seen.rows] == ["turn 1", "answer 1"]
