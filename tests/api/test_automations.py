"""Automations: validation, CRUD, toggles, runs through the real agent with a
scripted model, delivery to a notifier, no overlap, and missed runs at start-up."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from tests.support.chat_models import events_until, install_model, scripted, until_streaming
from tests.support.fake_http import recording_server
from tests.support.triggers import never_soon

from famulus.timeutil import iso, parse_iso, utcnow

DAILY = never_soon()


async def _create(client: httpx.AsyncClient, **over: Any) -> dict:
    body = {"name": "Brief", "description": "Summarize my day.", "trigger": DAILY, **over}
    r = await client.post("/automations", json=body)
    assert r.status_code == 201, r.text
    return r.json()


async def _wait_done(client: httpx.AsyncClient, aid: int, runs: int = 1) -> dict:
    for _ in range(200):
        body = (await client.get(f"/automations/{aid}")).json()
        if (
            not body["running"]
            and len([r for r in body["runs"] if r["status"] != "running"]) >= runs
        ):
            return body
        await asyncio.sleep(0.05)
    raise AssertionError("automation did not finish")


async def test_create_shape_and_defaults(client: httpx.AsyncClient) -> None:
    a = await _create(client)
    assert a["enabled"] is True and a["writable"] is False and a["running"] is False
    assert a["trigger"] == {**DAILY, "days": "daily"}
    assert a["notifiers"] == [] and a["last_run_at"] is None
    nxt = parse_iso(a["next_run_at"])
    assert 0 < (nxt - utcnow()).total_seconds() <= 86400
    every = await _create(client, trigger={"type": "time", "every": "30m"})
    assert 1790 < (parse_iso(every["next_run_at"]) - utcnow()).total_seconds() <= 1800
    ev = await _create(
        client, trigger={"type": "event", "event_type": "calendar", "lead_minutes": 15}
    )
    assert ev["next_run_at"] is None
    listed = (await client.get("/automations")).json()["automations"]
    assert [x["id"] for x in listed] == [a["id"], every["id"], ev["id"]]


@pytest.mark.parametrize(
    "trigger",
    [
        {"type": "time", "at": "25:00"},
        {"type": "time", "at": "7:30"},
        {"type": "time", "at": "07:30", "days": "mon,funday"},
        {"type": "time", "every": "0m"},
        {"type": "time", "every": "10s"},
        {"type": "time"},
        {"type": "event", "event_type": "calendar", "lead_minutes": 2000},
        {"type": "event", "event_type": "email", "lead_minutes": 5},
        {"type": "cron"},
        {"type": "time", "at": "07:30", "extra": 1},
    ],
)
async def test_bad_triggers_are_422(client: httpx.AsyncClient, trigger: dict) -> None:
    r = await client.post(
        "/automations", json={"name": "x", "description": "y", "trigger": trigger}
    )
    assert r.status_code == 422, r.text


async def test_unknown_notifier_is_422(client: httpx.AsyncClient) -> None:
    r = await client.post(
        "/automations",
        json={"name": "x", "description": "y", "trigger": DAILY, "notifiers": ["nope"]},
    )
    assert r.status_code == 422 and "nope" in r.json()["detail"]
    assert r.json()["errors"][0]["loc"] == ["body", "notifiers"]
    a = await _create(client)
    r = await client.patch(f"/automations/{a['id']}", json={"notifiers": ["nope"]})
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "notifiers"]


@pytest.mark.parametrize(
    "name", ["evil\r\nBcc: evil@example.org", "tab\there", "nul\x00", "c1\x85", "del\x7f"]
)
async def test_names_with_control_characters_are_422(client: httpx.AsyncClient, name: str) -> None:
    body = {"name": name, "description": "y", "trigger": DAILY}
    r = await client.post("/automations", json=body)
    assert r.status_code == 422, r.text
    assert r.json()["errors"][0]["loc"] == ["body", "name"]
    a = await _create(client)
    r = await client.patch(f"/automations/{a['id']}", json={"name": name})
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "name"]
    # non-ASCII printable names stay fine; the length limit stays
    ok = await client.patch(f"/automations/{a['id']}", json={"name": "Müsli — Plan ☕"})
    assert ok.status_code == 200 and ok.json()["name"] == "Müsli — Plan ☕"
    long = await client.patch(f"/automations/{a['id']}", json={"name": "x" * 201})
    assert long.status_code == 422 and "200 characters" in long.json()["detail"]


async def test_patch_toggle_writable_delete(client: httpx.AsyncClient) -> None:
    a = await _create(client)
    r = await client.patch(
        f"/automations/{a['id']}",
        json={
            "description": "New task",
            "trigger": {"type": "time", "at": "08:00", "days": "weekdays"},
        },
    )
    assert r.json()["description"] == "New task" and r.json()["trigger"]["days"] == "weekdays"
    assert (await client.post(f"/automations/{a['id']}/toggle")).json() == {
        "id": a["id"],
        "enabled": False,
    }
    assert (await client.post(f"/automations/{a['id']}/toggle")).json() == {
        "id": a["id"],
        "enabled": True,
    }
    assert (await client.post(f"/automations/{a['id']}/writable")).json() == {
        "id": a["id"],
        "writable": True,
    }
    assert (await client.delete(f"/automations/{a['id']}")).json() == {
        "status": "deleted",
        "id": a["id"],
    }
    for method, path in [
        ("GET", ""),
        ("PATCH", ""),
        ("POST", "/toggle"),
        ("POST", "/run"),
        ("DELETE", ""),
    ]:
        kw = {"json": {"name": "z"}} if method == "PATCH" else {}
        assert (
            await client.request(method, f"/automations/{a['id']}{path}", **kw)
        ).status_code == 404


async def test_run_delivers_to_notifier_and_blocks_overlap(
    app: Any, client: httpx.AsyncClient
) -> None:
    install_model(app, scripted("Your day: two meetings.", delay=0.05))
    with recording_server(lambda m, p, b: (200, {})) as hook:
        await client.post(
            "/notifiers/configs",
            json={"name": "hook", "type": "webhook", "config": {"url": hook.url}},
        )
        a = await _create(client, notifiers=["hook"])
        r = await client.post(f"/automations/{a['id']}/run")
        assert r.status_code == 202 and r.json()["status"] == "started"
        again = await client.post(f"/automations/{a['id']}/run")
        assert again.status_code == 409
        body = await _wait_done(client, a["id"])
        assert body["last_status"] == "ok"
        assert "two meetings" in body["last_result"]
        assert body["runs"][0]["status"] == "ok" and body["runs"][0]["finished_at"]
        assert "two meetings" in hook.requests[0][2]["text"]
        # a notifier in use cannot be deleted
        assert (await client.delete("/notifiers/configs/hook")).status_code == 409


async def test_read_only_run_denies_writes(app: Any, client: httpx.AsyncClient) -> None:
    install_model(
        app,
        scripted(
            ("tool", "update_directives", '{"content": "be brief", "mode": "replace"}'),
            "Could not change it.",
        ),
    )
    await client.put("/directives", json={"content": "original"})
    a = await _create(client)
    await client.post(f"/automations/{a['id']}/run")
    body = await _wait_done(client, a["id"])
    assert body["last_status"] == "ok"
    assert (await client.get("/directives")).json()["content"] == "original"


async def test_read_only_refusal_is_not_the_persons_feedback(
    app: Any, client: httpx.AsyncClient
) -> None:
    fact = (await client.post("/facts", json={"text": "Old phone number 555-0100"})).json()
    install_model(
        app,
        scripted(("tool", "forget", f'{{"fact_id": {fact["fact"]["id"]}}}'), "Could not."),
    )
    a = await _create(client)
    await client.post(f"/automations/{a['id']}/run")
    body = await _wait_done(client, a["id"])
    assert body["last_status"] == "ok"
    assert (await client.get("/stats")).json()["fact_count"] == 1
    events = (await client.get("/memory/learning/events")).json()["events"]
    assert not [e for e in events if e["kind"] == "approval_denied"]
    hub = app.state.container.events
    replay = await hub.replay(body["session_id"], 0)
    result = next(e.data for e in replay if e.type == "tool_result")
    assert "not writable" in result["result"] and "person declined" not in result["result"]
    assert not [e for e in replay if e.type == "approval_needed"]


@pytest.mark.parametrize("writable", [False, True])
async def test_remember_follows_writable(
    app: Any, client: httpx.AsyncClient, writable: bool
) -> None:
    """remember needs no approval in chat, yet a read-only automation may not use it."""
    install_model(
        app,
        scripted(("tool", "remember", '{"text": "The bins go out on Tuesday"}'), "Done."),
    )
    a = await _create(client, writable=writable)
    await client.post(f"/automations/{a['id']}/run")
    body = await _wait_done(client, a["id"])
    assert body["last_status"] == "ok", (body["runs"], body["running"], body["last_result"])
    facts = (await client.get("/facts")).json()["facts"]
    if writable:
        assert [(f["text"], f["source_type"]) for f in facts] == [
            ("The bins go out on Tuesday", "automation")
        ]
    else:
        assert facts == []


async def test_failed_run_is_recorded(client: httpx.AsyncClient) -> None:
    a = await _create(client)  # no model connected
    await client.post(f"/automations/{a['id']}/run")
    body = await _wait_done(client, a["id"])
    assert body["last_status"] == "error" and "model" in body["last_result"].lower()


async def test_missed_run_runs_once_at_tick(app: Any, client: httpx.AsyncClient) -> None:
    install_model(app, scripted("done"))
    a = await _create(client)
    svc = app.state.container.automations
    past = iso(utcnow().replace(year=utcnow().year - 1))
    await svc.store.update(a["id"], {"next_run_at": past}, touch=False)
    await svc.tick()
    await svc.tick()  # still running or rescheduled: never a second run
    body = await _wait_done(client, a["id"])
    assert len(body["runs"]) == 1
    assert parse_iso(body["next_run_at"]) > utcnow()


async def test_runs_use_their_own_session_not_the_default(
    app: Any, client: httpx.AsyncClient
) -> None:
    install_model(app, scripted("first run", "second run"))
    mine = (await client.post("/sessions", json={"name": "mine"})).json()["session_id"]
    a = await _create(client, name="Brief")
    assert (await client.get(f"/automations/{a['id']}")).json()["session_id"] is None
    await client.post(f"/automations/{a['id']}/run")
    body = await _wait_done(client, a["id"])
    sid = body["session_id"]
    assert sid and sid != mine
    # the default session and the list are still the person's conversation
    assert (await client.get("/session")).json()["session_id"] == mine
    assert (await client.get("/session/history")).json()["session_id"] == mine
    listed = (await client.get("/sessions")).json()["sessions"]
    assert [s["session_id"] for s in listed] == [mine]
    autos = (await client.get("/sessions", params={"origin": "automation"})).json()["sessions"]
    assert [(s["session_id"], s["name"]) for s in autos] == [(sid, "Automation: Brief")]
    history = (await client.get("/session/history", params={"session_id": sid})).json()
    assert any("first run" in m["content"] for m in history["messages"])
    # a second run reuses the session
    await client.post(f"/automations/{a['id']}/run")
    body = await _wait_done(client, a["id"], runs=2)
    assert body["session_id"] == sid
    history = (await client.get("/session/history", params={"session_id": sid})).json()
    assert any("second run" in m["content"] for m in history["messages"])
    assert (await client.get("/session")).json()["session_id"] == mine
    # a permanently deleted session is reported as none
    await client.delete(f"/sessions/{sid}/permanent")
    assert (await client.get(f"/automations/{a['id']}")).json()["session_id"] is None


async def test_empty_patch_changes_nothing(client: httpx.AsyncClient) -> None:
    a = await _create(client)
    await asyncio.sleep(0.01)
    r = await client.patch(f"/automations/{a['id']}", json={})
    assert r.status_code == 200
    assert r.json() == a
    assert (await client.get("/automations")).json()["automations"] == [a]


async def test_disabled_automation_has_no_next_run(app: Any, client: httpx.AsyncClient) -> None:
    off = await _create(client, enabled=False)
    assert off["enabled"] is False and off["next_run_at"] is None
    # enabling computes it, disabling clears it again
    await client.post(f"/automations/{off['id']}/toggle")
    on = (await client.get(f"/automations/{off['id']}")).json()
    assert 0 < (parse_iso(on["next_run_at"]) - utcnow()).total_seconds() <= 86400
    await client.post(f"/automations/{off['id']}/toggle")
    assert (await client.get(f"/automations/{off['id']}")).json()["next_run_at"] is None
    # changing the trigger while disabled keeps it null; enabling by PATCH computes it
    r = await client.patch(
        f"/automations/{off['id']}", json={"trigger": {"every": "30m", "type": "time"}}
    )
    assert r.json()["next_run_at"] is None
    r = await client.patch(f"/automations/{off['id']}", json={"enabled": True})
    assert 1790 < (parse_iso(r.json()["next_run_at"]) - utcnow()).total_seconds() <= 1800
    r = await client.patch(f"/automations/{off['id']}", json={"enabled": False})
    assert r.json()["next_run_at"] is None
    # the scheduler never starts a disabled automation
    svc = app.state.container.automations
    await svc.tick()
    assert (await client.get(f"/automations/{off['id']}")).json()["runs"] == []


async def test_enabling_does_not_move_a_pending_missed_run(
    app: Any, client: httpx.AsyncClient
) -> None:
    install_model(app, scripted("done"))
    a = await _create(client)
    svc = app.state.container.automations
    past = iso(utcnow().replace(year=utcnow().year - 1))
    await svc.store.update(a["id"], {"next_run_at": past}, touch=False)
    # an update that does not touch the schedule keeps the missed slot due
    r = await client.patch(f"/automations/{a['id']}", json={"enabled": True, "name": "B2"})
    assert r.json()["next_run_at"] == past
    await svc.tick()
    body = await _wait_done(client, a["id"])
    assert len(body["runs"]) == 1
    assert parse_iso(body["next_run_at"]) > utcnow()


def test_migration_marks_automation_sessions_and_clears_disabled_next_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sqlite3

    from famulus.store import migrate

    every = migrate._migration_files()
    conn = sqlite3.connect(":memory:", isolation_level=None)
    monkeypatch.setattr(migrate, "_migration_files", lambda: [m for m in every if m[0] < "0330"])
    migrate.apply_migrations(conn)
    now = iso(utcnow())
    for sid in ("s_chat", "s_auto"):
        conn.execute(
            "INSERT INTO sessions (id, name, created_at, last_activity) VALUES (?, ?, ?, ?)",
            (sid, sid, now, now),
        )
    for name, sid, enabled in (("a", "s_auto", 1), ("b", None, 0)):
        conn.execute(
            "INSERT INTO automations (name, description, trigger, enabled, session_id,"
            " created_at, updated_at, next_run_at) VALUES (?, 'd', '{}', ?, ?, ?, ?, ?)",
            (name, enabled, sid, now, now, now),
        )
    monkeypatch.setattr(migrate, "_migration_files", lambda: every)
    assert "0330_session_origin" in migrate.apply_migrations(conn)
    origins = dict(conn.execute("SELECT id, origin FROM sessions").fetchall())
    assert origins == {"s_chat": "chat", "s_auto": "automation"}
    nxt = dict(conn.execute("SELECT name, next_run_at FROM automations").fetchall())
    assert nxt == {"a": now, "b": None}
    since = dict(conn.execute("SELECT name, enabled_at FROM automations").fetchall())
    assert since == {"a": now, "b": None}


async def _session_id(svc: Any, aid: int) -> str:
    for _ in range(200):
        row = await svc.store.get(aid)
        if row is not None and row.session_id:
            return str(row.session_id)
        await asyncio.sleep(0.02)
    raise AssertionError("the run got no session")


async def test_deleting_a_running_automation_cancels_its_run(
    app: Any, client: httpx.AsyncClient
) -> None:
    install_model(app, scripted(" ".join(["slowly"] * 500), delay=0.02))
    a = await _create(client)
    svc = app.state.container.automations
    feed: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    svc.listeners.add(feed)  # what GET /automations/events streams
    run_id = (await client.post(f"/automations/{a['id']}/run")).json()["run_id"]
    sid = await _session_id(svc, a["id"])
    await until_streaming(app, sid)
    r = await client.delete(f"/automations/{a['id']}")
    assert r.json() == {"status": "deleted", "id": a["id"]}
    # the chat run in its session ended as cancelled, not finished later
    events = await events_until(app, sid, ("run_cancelled", "run_finished", "run_error"))
    assert [e["type"] for e in events if e["type"].startswith("run_")][-1] == "run_cancelled"
    assert not svc.is_running(a["id"]) and not app.state.container.chat.active
    # the automation feed closes the run it opened
    got = [await asyncio.wait_for(feed.get(), 5) for _ in range(2)]
    assert got[0] == {"type": "automation_started", "id": a["id"], "run_id": run_id}
    assert got[1]["type"] == "automation_finished" and got[1]["status"] == "cancelled"
    assert got[1]["id"] == a["id"] and got[1]["run_id"] == run_id
    assert (await client.get(f"/automations/{a['id']}")).status_code == 404
