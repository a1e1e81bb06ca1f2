"""Issue 11 schedules: raw cron triggers and one-shot times, in the person's
zone (FAMULUS_TIMEZONE), and how a one-shot switches itself off."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest
from croniter import croniter
from tests.conftest import API_KEY
from tests.support.chat_models import install_model, scripted

from famulus.settings import Settings
from famulus.timeutil import iso, parse_iso, utcnow

ZONE = "Pacific/Auckland"  # far from UTC and from the machine, so a zone slip shows


@pytest.fixture
def settings(home: Path, tmp_path: Path) -> Settings:
    return Settings(
        home=home,
        api_key=API_KEY,  # type: ignore[arg-type]
        project_dir=tmp_path / "project",
        timezone=ZONE,
    )


async def _post(client: httpx.AsyncClient, trigger: dict[str, Any], **over: Any) -> httpx.Response:
    body = {"name": "Sched", "description": "Say hi.", "trigger": trigger, **over}
    return await client.post("/automations", json=body)


async def _wait_runs(client: httpx.AsyncClient, aid: int, n: int = 1) -> dict:
    for _ in range(300):
        body = (await client.get(f"/automations/{aid}")).json()
        done = [r for r in body["runs"] if r["status"] != "running"]
        if not body["running"] and len(done) >= n:
            return body
        await asyncio.sleep(0.05)
    raise AssertionError("the automation did not finish")


async def test_cron_trigger_fires_in_the_configured_zone(client: httpx.AsyncClient) -> None:
    r = await _post(client, {"type": "time", "cron": "  0 7   * * 1-5 "})
    assert r.status_code == 201, r.text
    a = r.json()
    assert a["trigger"] == {"type": "time", "cron": "0 7 * * 1-5"}
    nxt = parse_iso(a["next_run_at"]).astimezone(ZoneInfo(ZONE))
    assert (nxt.hour, nxt.minute) == (7, 0) and nxt.isoweekday() <= 5
    expected = croniter("0 7 * * 1-5", utcnow().astimezone(ZoneInfo(ZONE))).get_next(datetime)
    assert parse_iso(a["next_run_at"]) == expected
    # a PATCH to another cron recomputes the next slot
    r = await client.patch(
        f"/automations/{a['id']}", json={"trigger": {"type": "time", "cron": "30 18 * * sat"}}
    )
    nxt = parse_iso(r.json()["next_run_at"]).astimezone(ZoneInfo(ZONE))
    assert (nxt.hour, nxt.minute, nxt.isoweekday()) == (18, 30, 6)


@pytest.mark.parametrize(
    ("cron", "says"),
    [
        ("61 * * * *", "'61 * * * *' is not a valid cron expression: minute must be 0-59"),
        ("0 24 * * *", "hour must be 0-23 (got '24')"),
        ("0 7 0 * *", "day of month must be 1-31 (got '0')"),
        ("0 7 * 13 *", "month must be 1-12 or jan-dec (got '13')"),
        ("0 7 * * 8", "day of week must be 0-7"),
        ("0 7 * *", "it needs 5 fields (minute hour day-of-month month day-of-week), not 4"),
        ("0 0 7 * * 1-5", "not 6"),
        ("@daily", "not 1"),
        ("0 0 30 2 *", "'0 0 30 2 *' never fires"),
    ],
)
async def test_bad_cron_is_a_clear_422(client: httpx.AsyncClient, cron: str, says: str) -> None:
    r = await _post(client, {"type": "time", "cron": cron})
    assert r.status_code == 422, r.text
    assert says in r.json()["detail"] and r.json()["detail"].startswith("Invalid trigger: cron: ")
    assert r.json()["errors"][0]["loc"] == ["body", "trigger", "cron"]


async def test_once_local_or_with_offset(client: httpx.AsyncClient) -> None:
    zone = ZoneInfo(ZONE)
    local = (utcnow().astimezone(zone) + timedelta(days=3)).replace(second=0, microsecond=0)
    text = local.strftime("%Y-%m-%dT%H:%M")
    r = await _post(client, {"type": "time", "once": text})
    assert r.status_code == 201, r.text
    assert r.json()["trigger"] == {"type": "time", "once": text}
    assert parse_iso(r.json()["next_run_at"]) == local  # local time in FAMULUS_TIMEZONE
    offset = "2099-06-01T09:30:00+02:00"
    r = await _post(client, {"type": "time", "once": offset})
    assert parse_iso(r.json()["next_run_at"]) == datetime.fromisoformat(offset)


@pytest.mark.parametrize(
    ("once", "says"),
    [
        ("2020-01-01T09:30", "2020-01-01 09:30 (Pacific/Auckland) is in the past"),
        ("2099-02-30T09:30", "is not a date and time such as 2026-12-01T09:30"),
        ("tomorrow at 9", "is not a date and time"),
        ("2099-12-01", "is not a date and time"),
    ],
)
async def test_bad_once_is_a_clear_422(client: httpx.AsyncClient, once: str, says: str) -> None:
    r = await _post(client, {"type": "time", "once": once})
    assert r.status_code == 422, r.text
    assert says in r.json()["detail"]
    assert r.json()["errors"][0]["loc"] == ["body", "trigger", "once"]


async def test_one_shot_runs_once_then_is_disabled(app: Any, client: httpx.AsyncClient) -> None:
    install_model(app, scripted("Hello there."))
    soon = (utcnow() + timedelta(hours=1)).astimezone(ZoneInfo(ZONE)).strftime("%Y-%m-%dT%H:%M")
    a = (await _post(client, {"type": "time", "once": soon})).json()
    assert a["enabled"] is True and a["next_run_at"] is not None
    svc = app.state.container.automations
    # time travel: its moment has come (or was missed while the server was down)
    past = utcnow() - timedelta(seconds=61)
    moment = past.astimezone(ZoneInfo(ZONE)).strftime("%Y-%m-%dT%H:%M")
    await svc.store.update(
        a["id"], {"next_run_at": iso(past), "trigger": {"type": "time", "once": moment}}
    )
    await svc.tick()
    body = await _wait_runs(client, a["id"])
    assert body["runs"][0]["status"] == "ok" and "Hello there." in body["last_result"]
    assert body["enabled"] is False and body["next_run_at"] is None
    await svc.tick()  # nothing left to run
    await asyncio.sleep(0.1)
    assert len((await client.get(f"/automations/{a['id']}")).json()["runs"]) == 1
    # enabling it again needs a new time
    r = await client.post(f"/automations/{a['id']}/toggle")
    assert r.status_code == 422 and "has passed" in r.json()["detail"]
    later = (utcnow() + timedelta(days=1)).replace(microsecond=0).isoformat()
    r = await client.patch(
        f"/automations/{a['id']}",
        json={"enabled": True, "trigger": {"type": "time", "once": later}},
    )
    assert r.status_code == 200 and r.json()["enabled"] is True
    assert parse_iso(r.json()["next_run_at"]) == parse_iso(later)


async def test_reminder_kind_sends_its_text_without_a_model(client: httpx.AsyncClient) -> None:
    never = {"type": "time", "cron": "0 3 1 1 *"}
    r = await _post(client, never, kind="reminder", description="Reminder: water the plants")
    assert r.status_code == 201 and r.json()["kind"] == "reminder"
    a = r.json()
    await client.post(f"/automations/{a['id']}/run")  # no model is connected at all
    body = await _wait_runs(client, a["id"])
    assert body["last_status"] == "ok" and body["last_result"] == "Reminder: water the plants"
    assert body["session_id"] is None
    r = await client.patch(f"/automations/{a['id']}", json={"kind": "task"})
    assert r.json()["kind"] == "task"
    assert (await _post(client, never)).json()["kind"] == "task"
    bad = await client.patch(f"/automations/{a['id']}", json={"kind": "alarm"})
    assert bad.status_code == 422
