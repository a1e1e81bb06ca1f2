"""DELETE /chat/queue/{client_id}: take back a message queued while a run works."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import httpx
from tests.support.chat_models import events_until, install_model, scripted, until_streaming
from tests.support.sessions import new_session

SLOW = " ".join(f"w{i}" for i in range(60))


def _recording(*turns: Any, delay: float = 0.0) -> tuple[list[str], Any]:
    """A scripted model that also records every request it is sent."""
    seen: list[str] = []

    def record(turn: Any) -> Any:
        def play(messages: list[Any]) -> Any:
            seen.append(repr(messages))
            return turn

        return play

    return seen, scripted(*[record(t) for t in turns], delay=delay)


async def _history_users(client: httpx.AsyncClient, sid: str) -> list[str]:
    r = await client.get("/session/history", params={"session_id": sid})
    return [m["content"] for m in r.json()["messages"] if m["role"] == "user"]


async def _queue(client: httpx.AsyncClient, sid: str, text: str, client_id: str) -> str:
    r = await client.post(
        "/chat/message", json={"message": text, "session_id": sid, "client_id": client_id}
    )
    assert r.status_code == 202 and r.json()["queued"] is True, r.text
    return str(r.json()["run_id"])


async def test_withdraw_a_waiting_message(app: Any, client: httpx.AsyncClient) -> None:
    seen, model = _recording(SLOW, delay=0.02)
    install_model(app, model)
    sid = await new_session(client)
    await client.post("/chat/message", json={"message": "one", "session_id": sid})
    await until_streaming(app, sid)
    run_id = await _queue(client, sid, "never mind", "c-2")

    r = await client.delete("/chat/queue/c-2", params={"session_id": sid})
    assert r.status_code == 200, r.text
    assert r.json() == {
        "status": "withdrawn",
        "session_id": sid,
        "run_id": run_id,
        "client_id": "c-2",
        "message": "never mind",
    }
    again = await client.delete("/chat/queue/c-2", params={"session_id": sid})
    assert again.status_code == 404 and again.json()["code"] == "not_found"

    events = await events_until(app, sid, "run_finished")
    types = [e["type"] for e in events]
    assert "message_ingested" not in types
    withdrawn = next(e for e in events if e["type"] == "message_withdrawn")
    assert withdrawn == {
        "type": "message_withdrawn",
        "run_id": run_id,
        "client_id": "c-2",
        "_seq": withdrawn["_seq"],
    }
    await asyncio.sleep(0.1)  # a leftover would start a second run now
    assert [e["type"] for e in await events_until(app, sid, "run_finished")].count(
        "run_started"
    ) == 1
    assert await _history_users(client, sid) == ["one"]
    assert not any("never mind" in s for s in seen)


async def test_a_withdrawn_message_is_not_kept_by_a_cancel(
    app: Any, client: httpx.AsyncClient
) -> None:
    install_model(app, scripted(SLOW * 3, delay=0.02))
    sid = await new_session(client)
    await client.post("/chat/message", json={"message": "one", "session_id": sid})
    await until_streaming(app, sid)
    await _queue(client, sid, "keep me", "keep")
    await _queue(client, sid, "drop me", "drop")
    r = await client.delete("/chat/queue/drop", params={"session_id": sid})
    assert r.status_code == 200, r.text
    await client.post("/cancel", json={"session_id": sid})
    await events_until(app, sid, "run_cancelled")
    assert await _history_users(client, sid) == ["one", "keep me"]  # "keep me": unanswered
    assert await app.state.container.chat.pending.waiting(sid, "drop") is None
    r = await client.delete("/chat/queue/keep", params={"session_id": sid})
    assert r.status_code == 409, r.text  # in history as an unanswered message


async def test_withdraw_after_the_run_took_it_in_is_409(
    app: Any, client: httpx.AsyncClient
) -> None:
    install_model(app, scripted(SLOW, "second answer", delay=0.01))
    sid = await new_session(client)
    await client.post("/chat/message", json={"message": "one", "session_id": sid})
    await until_streaming(app, sid)
    await _queue(client, sid, "two", "c-2")
    await events_until(app, sid, "message_ingested")
    r = await client.delete("/chat/queue/c-2", params={"session_id": sid})
    assert r.status_code == 409, r.text
    assert r.json()["code"] == "conflict" and "taken in" in r.json()["detail"]
    await events_until(app, sid, "run_finished")
    r = await client.delete("/chat/queue/c-2", params={"session_id": sid})
    assert r.status_code == 409, r.text
    assert await _history_users(client, sid) == ["one", "two"]
    types = [e["type"] for e in await events_until(app, sid, "run_finished")]
    assert "message_withdrawn" not in types


async def test_withdraw_errors(client: httpx.AsyncClient) -> None:
    sid = await new_session(client)
    r = await client.delete("/chat/queue/c-1", params={"session_id": sid})
    assert r.status_code == 404 and r.json()["code"] == "not_found", r.text
    r = await client.delete("/chat/queue/c-1", params={"session_id": "s_nope"})
    assert r.status_code == 404 and "s_nope" in r.json()["detail"], r.text
    r = await client.delete("/chat/queue/c-1")
    assert r.status_code == 422 and r.json()["errors"], r.text
    r = await client.delete("/chat/queue/" + "x" * 201, params={"session_id": sid})
    assert r.status_code == 422, r.text
    r = await client.request("DELETE", "/chat/queue/c-1", params={"session_id": sid}, json={"a": 1})
    assert r.status_code == 422, r.text  # the endpoint takes no body


async def test_withdraw_racing_the_turn_boundary_is_200_or_409_and_consistent(
    app: Any, client: httpx.AsyncClient
) -> None:
    """Whatever the timing, the answer matches what happened: 200 and the model
    never saw the message, or 409 and it is in history. Never a 500."""
    rng = random.Random(7)
    outcomes: set[int] = set()
    for n in range(10):
        seen, model = _recording(("tool", "current_time", "{}"), "done", delay=0.005)
        install_model(app, model)
        sid = await new_session(client)
        await client.post("/chat/message", json={"message": "go", "session_id": sid})
        await _queue(client, sid, f"extra {n}", f"c-{n}")
        await asyncio.sleep(rng.uniform(0, 0.05))
        r = await client.delete(f"/chat/queue/c-{n}", params={"session_id": sid})
        assert r.status_code in (200, 409), r.text
        outcomes.add(r.status_code)
        await events_until(app, sid, "run_finished")
        await asyncio.sleep(0.05)
        for _ in range(100):  # a leftover may be answered by a second run
            if app.state.container.chat.foreground.get(sid) is None:
                break
            await asyncio.sleep(0.02)
        in_history = f"extra {n}" in await _history_users(client, sid)
        if r.status_code == 200:
            assert not in_history and not any(f"extra {n}" in s for s in seen)
        else:
            assert in_history
    assert outcomes  # at least one round ran


async def test_withdraw_racing_a_permanent_delete_never_500s(
    app: Any, client: httpx.AsyncClient
) -> None:
    install_model(app, scripted(SLOW, delay=0.02))
    for n in range(4):
        sid = await new_session(client)
        await client.post("/chat/message", json={"message": "one", "session_id": sid})
        await until_streaming(app, sid)
        await _queue(client, sid, "two", f"c-{n}")
        answers = await asyncio.gather(
            client.delete(f"/sessions/{sid}/permanent"),
            client.delete(f"/chat/queue/c-{n}", params={"session_id": sid}),
        )
        assert answers[0].status_code == 200, answers[0].text
        assert answers[1].status_code in (200, 404, 409), answers[1].text


async def test_a_message_that_started_a_run_is_taken_in(
    app: Any, client: httpx.AsyncClient
) -> None:
    """A run's first message keeps its client_id: withdrawing it is 409, as for a
    queued message the run took in (a leftover re-sent as a new run's first
    message takes this path)."""
    install_model(app, scripted("done"))
    sid = await new_session(client)
    r = await client.post(
        "/chat/message", json={"message": "hello", "session_id": sid, "client_id": "c-first"}
    )
    assert r.status_code == 202 and r.json()["queued"] is False, r.text
    await events_until(app, sid, "run_finished")
    r = await client.delete("/chat/queue/c-first", params={"session_id": sid})
    assert r.status_code == 409 and r.json()["code"] == "conflict", r.text
    assert "already taken in" in r.json()["detail"]
