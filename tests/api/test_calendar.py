"""The calendar half of the account against a real CalDAV server (Radicale):
the agent's calendar tools, approvals for creating events, and calendar-
triggered automations that fire once per event occurrence."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest
from tests.conftest import API_KEY
from tests.support.chat_models import events_until, install_model, scripted
from tests.support.radicale import PASSWORD, USER, CalDav, radicale_server
from tests.support.sessions import new_session

from famulus.settings import Settings
from famulus.timeutil import parse_iso, utcnow

ZONE = ZoneInfo("Europe/Berlin")


@pytest.fixture
def caldav_server(tmp_path: Path) -> Iterator[CalDav]:
    with radicale_server(tmp_path / "radicale") as server:
        yield server


@pytest.fixture
def settings(home: Path, tmp_path: Path, caldav_server: CalDav) -> Settings:
    return Settings(
        home=home,
        api_key=API_KEY,  # type: ignore[arg-type]
        project_dir=tmp_path / "project",
        timezone="Europe/Berlin",
        caldav_url=caldav_server.url,
        account_username=USER,
        account_password=PASSWORD,  # type: ignore[arg-type]
        calendar_poll_s=0.2,
    )


def _minute(dt: datetime) -> datetime:
    return dt.replace(second=0, microsecond=0)


async def _tool_names(app: Any) -> set[str]:
    names: set[str] = set()
    for toolset in await app.state.container.core.hooks.agent_toolsets():
        names.update(getattr(toolset, "tools", {}))
    return names


async def test_config_connected_and_tools_follow_the_switch(
    app: Any, client: httpx.AsyncClient
) -> None:
    account = (await client.get("/config")).json()["integrations"]["account"]
    assert account == {"enabled": True, "connected": True}
    assert {"calendar_events", "create_calendar_event"} <= await _tool_names(app)
    r = await client.patch("/config", json={"account_enabled": False})
    assert r.json()["integrations"]["account"] == {"enabled": False, "connected": False}
    assert not {"calendar_events", "create_calendar_event"} & await _tool_names(app)


async def test_calendar_events_tool_reads_the_server(
    app: Any, client: httpx.AsyncClient, caldav_server: CalDav
) -> None:
    now = _minute(utcnow())
    await asyncio.to_thread(
        caldav_server.add,
        "Dentist",
        now + timedelta(hours=3),
        now + timedelta(hours=4),
        location="Main Street 5",
        description="Bring the insurance card.",
    )
    await asyncio.to_thread(
        caldav_server.add,
        "Standup",
        now - timedelta(days=3, hours=-1),
        now - timedelta(days=3, hours=-1) + timedelta(minutes=15),
        rrule={"FREQ": "DAILY"},
    )
    await asyncio.to_thread(
        caldav_server.add, "Far trip", now + timedelta(days=20), now + timedelta(days=21)
    )
    install_model(app, scripted(("tool", "calendar_events", '{"days_ahead": 2}'), "Listed."))
    sid = await new_session(client)
    await client.post("/chat/message", json={"message": "my week?", "session_id": sid})
    events = await events_until(app, sid, "run_finished")
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["error"] is False
    text = result["result"]
    start = (now + timedelta(hours=3)).astimezone(ZONE)
    assert f"{start:%H:%M}" in text and "Dentist @ Main Street 5 [Work]" in text
    assert "Bring the insurance card." in text and "Europe/Berlin" in text
    assert text.count("Standup") == 2  # daily, expanded: in 1 h and in 25 h
    assert "Far trip" not in text


async def _create_via_chat(
    app: Any, client: httpx.AsyncClient, approved: bool
) -> tuple[dict[str, Any], datetime]:
    day = (utcnow() + timedelta(days=2)).astimezone(ZONE).date()
    start = datetime(day.year, day.month, day.day, 12, 30, tzinfo=ZONE)
    args = {
        "summary": "Lunch with Ana",
        "start": f"{day.isoformat()}T12:30:00",  # no offset: the configured zone
        "end": f"{day.isoformat()}T13:30:00",
        "location": "Cafe Blau",
    }
    install_model(app, scripted(("tool", "create_calendar_event", json.dumps(args)), "Done."))
    sid = await new_session(client)
    run_id = (
        await client.post("/chat/message", json={"message": "book lunch", "session_id": sid})
    ).json()["run_id"]
    need = (await events_until(app, sid, "approval_needed"))[-1]
    assert need["name"] == "create_calendar_event" and need["args"]["summary"] == "Lunch with Ana"
    r = await client.post(
        "/tools/result",
        json={"run_id": run_id, "tool_id": need["tool_id"], "approved": approved},
    )
    assert r.status_code == 200, r.text
    events = await events_until(app, sid, "run_finished")
    return next(e for e in events if e["type"] == "tool_result"), start


async def test_create_event_approved_is_on_the_server(
    app: Any, client: httpx.AsyncClient, caldav_server: CalDav
) -> None:
    result, start = await _create_via_chat(app, client, approved=True)
    assert result["result"].startswith("Created:")
    found = await asyncio.to_thread(caldav_server.summaries)
    assert len(found) == 1
    summary, dtstart, location = found[0]
    assert summary == "Lunch with Ana" and location == "Cafe Blau"
    assert dtstart == start  # 12:30 in Europe/Berlin


async def test_create_event_denied_is_not_created(
    app: Any, client: httpx.AsyncClient, caldav_server: CalDav
) -> None:
    result, _ = await _create_via_chat(app, client, approved=False)
    assert "declined" in result["result"]
    assert await asyncio.to_thread(caldav_server.summaries) == []


async def _automation(client: httpx.AsyncClient, lead: int, **over: Any) -> dict[str, Any]:
    body = {
        "name": "Prep",
        "description": "Help me prepare for the event.",
        "trigger": {"type": "event", "event_type": "calendar", "lead_minutes": lead},
        **over,
    }
    r = await client.post("/automations", json=body)
    assert r.status_code == 201, r.text
    return dict(r.json())


async def _detail(client: httpx.AsyncClient, aid: int) -> dict[str, Any]:
    return dict((await client.get(f"/automations/{aid}")).json())


async def _wait_runs(client: httpx.AsyncClient, aid: int, n: int) -> dict[str, Any]:
    for _ in range(200):
        body = await _detail(client, aid)
        done = [r for r in body["runs"] if r["status"] != "running"]
        if not body["running"] and len(done) >= n:
            return body
        await asyncio.sleep(0.05)
    raise AssertionError(f"automation {aid} did not finish {n} run(s)")


async def _task_messages(client: httpx.AsyncClient, app: Any, aid: int) -> list[str]:
    row = await app.state.container.automations.store.get(aid)
    hist = (await client.get("/session/history", params={"session_id": row.session_id})).json()[
        "messages"
    ]
    return [m["content"] for m in hist if m["role"] == "user"]


async def test_event_automation_fires_once_within_the_lead(
    app: Any, client: httpx.AsyncClient, caldav_server: CalDav
) -> None:
    now = _minute(utcnow())
    soon = now + timedelta(minutes=10)
    later = now + timedelta(hours=3)
    add = caldav_server.add
    await asyncio.to_thread(
        add, "Dentist", soon, soon + timedelta(minutes=30), location="Main Street 5",
        description="Bring the insurance card.",
    )  # fmt: skip
    await asyncio.to_thread(add, "Budget review", later, later + timedelta(hours=1))
    await asyncio.to_thread(add, "Far trip", now + timedelta(days=30), now + timedelta(days=31))
    await asyncio.to_thread(
        add, "Started long ago", now - timedelta(hours=1), now + timedelta(hours=1)
    )
    install_model(app, scripted("Prepared your notes."))
    a = await _automation(client, lead=30)
    body = await _wait_runs(client, a["id"], 1)
    assert body["last_status"] == "ok" and "Prepared" in body["last_result"]
    await asyncio.sleep(1.2)  # six more polls: the same event must not fire again
    body = await _detail(client, a["id"])
    assert len(body["runs"]) == 1 and not body["running"]
    # next_run_at: the next event in view, less the lead
    assert parse_iso(body["next_run_at"]) == later - timedelta(minutes=30)
    [task] = await _task_messages(client, app, a["id"])
    local = soon.astimezone(ZONE)
    assert task.startswith("Help me prepare for the event.")
    assert "Dentist @ Main Street 5" in task and "Bring the insurance card." in task
    assert f"{local:%Y-%m-%d %H:%M}" in task and "Europe/Berlin" in task
    assert "30 minute(s) before" in task
    for other in ("Budget review", "Far trip", "Started long ago"):
        assert other not in task


async def test_recurring_occurrences_fire_separately(
    app: Any, client: httpx.AsyncClient, caldav_server: CalDav
) -> None:
    watcher = app.state.container.calendar_watcher
    await watcher.stop()  # polled by hand with chosen clocks
    now = _minute(utcnow())
    first = now + timedelta(hours=5)
    await asyncio.to_thread(
        caldav_server.add, "Standup", first, first + timedelta(minutes=15),
        rrule={"FREQ": "DAILY"},
    )  # fmt: skip
    install_model(app, scripted("Noted."))
    a = await _automation(client, lead=0)
    off = await _automation(client, lead=0, name="Off", enabled=False)
    assert await watcher.poll(now) == []  # nothing is due yet
    assert parse_iso((await _detail(client, a["id"]))["next_run_at"]) == first
    assert (await _detail(client, off["id"]))["next_run_at"] is None
    at_first = first + timedelta(seconds=30)
    assert await watcher.poll(at_first) == [a["id"]]
    await _wait_runs(client, a["id"], 1)
    assert await watcher.poll(at_first + timedelta(seconds=20)) == []
    # long after the start, beyond the grace: never fires late
    assert await watcher.poll(first + timedelta(hours=2)) == []
    second = first + timedelta(days=1)
    assert await watcher.poll(second + timedelta(seconds=5)) == [a["id"]]
    await _wait_runs(client, a["id"], 2)
    tasks = await _task_messages(client, app, a["id"])
    assert len(tasks) == 2 and all("Standup" in t for t in tasks)
    assert f"{first.astimezone(ZONE):%Y-%m-%d}" in tasks[0]
    assert f"{second.astimezone(ZONE):%Y-%m-%d}" in tasks[1]
    assert (await _detail(client, off["id"]))["runs"] == []


async def test_no_firing_while_the_account_is_off(
    app: Any, client: httpx.AsyncClient, caldav_server: CalDav
) -> None:
    watcher = app.state.container.calendar_watcher
    await watcher.stop()
    now = _minute(utcnow())
    await asyncio.to_thread(
        caldav_server.add, "Dentist", now + timedelta(minutes=5), now + timedelta(minutes=35)
    )
    install_model(app, scripted("Noted."))
    await client.patch("/config", json={"account_enabled": False})
    a = await _automation(client, lead=15)
    assert await watcher.poll() == []
    assert (await _detail(client, a["id"]))["runs"] == []
    await client.patch("/config", json={"account_enabled": True})
    assert await watcher.poll() == [a["id"]]
    await _wait_runs(client, a["id"], 1)


async def test_events_under_way_before_activation_never_fire(
    app: Any, client: httpx.AsyncClient, caldav_server: CalDav, monkeypatch: pytest.MonkeyPatch
) -> None:
    from famulus.automations import service as service_module

    watcher = app.state.container.calendar_watcher
    await watcher.stop()
    start = _minute(utcnow()) - timedelta(minutes=2)  # under way, within the grace
    await asyncio.to_thread(caldav_server.add, "Under way", start, start + timedelta(hours=1))
    install_model(app, scripted("Noted."))
    earlier = start - timedelta(minutes=10)
    with monkeypatch.context() as m:
        m.setattr(service_module, "utcnow", lambda: earlier)
        # active before the event started: the server was down over its start
        down = await _automation(client, lead=0, name="Down")
        again = await _automation(client, lead=0, name="Again")
    # switched off and on now, while the event is under way
    for _ in range(2):
        assert (await client.post(f"/automations/{again['id']}/toggle")).status_code == 200
    row = await app.state.container.automations.store.get(again["id"])
    assert row.enabled_at is not None and parse_iso(row.enabled_at) > start
    fresh = await _automation(client, lead=0, name="Fresh")  # created now
    assert await watcher.poll() == [down["id"]]
    await _wait_runs(client, down["id"], 1)
    assert await watcher.poll() == []
    for a in (again, fresh):
        assert (await _detail(client, a["id"]))["runs"] == []
