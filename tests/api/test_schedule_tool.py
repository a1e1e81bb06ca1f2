"""The agent schedules for the person (issue 11): the ``schedule`` tool asks
for approval, then creates an automation delivered by the named or the
default notifier; "remind me in 20 minutes to call Anna" ends as the message
"Reminder: call Anna" at that time. Also the default notifier in /config."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from tests.support.chat_models import events_until, install_model, scripted
from tests.support.fake_http import Recorder, recording_server
from tests.support.sessions import new_session
from tests.support.triggers import never_soon

from famulus.timeutil import iso, parse_iso, utcnow


@pytest.fixture
def hook() -> Iterator[Recorder]:
    with recording_server(lambda m, p, b: (200, {})) as rec:
        yield rec


async def _notifier(client: httpx.AsyncClient, name: str, url: str) -> None:
    r = await client.post(
        "/notifiers/configs", json={"name": name, "type": "webhook", "config": {"url": url}}
    )
    assert r.status_code == 201, r.text


async def test_default_notifier_in_config(client: httpx.AsyncClient, hook: Recorder) -> None:
    assert (await client.get("/config")).json()["default_notifier"] is None
    r = await client.patch("/config", json={"default_notifier": "phone"})
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "default_notifier"]
    assert "no notifier named 'phone'" in r.json()["detail"]
    await _notifier(client, "phone", hook.url)
    r = await client.patch("/config", json={"default_notifier": "phone"})
    assert r.status_code == 200 and r.json()["default_notifier"] == "phone"
    assert (await client.patch("/config", json={"default_notifier": None})).json()[
        "default_notifier"
    ] is None
    # a failing part of a PATCH changes nothing else
    bad = await client.patch("/config", json={"default_notifier": "nope", "dreams_enabled": True})
    assert bad.status_code == 422
    assert (await client.get("/config")).json()["integrations"]["memory"]["dreams"] is False
    # deleting the default notifier clears the default
    await client.patch("/config", json={"default_notifier": "phone"})
    assert (await client.delete("/notifiers/configs/phone")).status_code == 200
    assert (await client.get("/config")).json()["default_notifier"] is None


async def _chat_approving(
    app: Any, client: httpx.AsyncClient, message: str, approved: bool = True
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Send ``message``, answer the schedule tool's approval, wait for the end."""
    sid = await new_session(client)
    run = await client.post("/chat/message", json={"message": message, "session_id": sid})
    need = (await events_until(app, sid, "approval_needed", timeout=20))[-1]
    assert need["name"] == "schedule" and need["description"]
    r = await client.post(
        "/tools/result",
        json={"run_id": run.json()["run_id"], "tool_id": need["tool_id"], "approved": approved},
    )
    assert r.status_code == 200, r.text
    events = await events_until(app, sid, "run_finished", timeout=20)
    return need, events


def _tool_result(events: list[dict[str, Any]]) -> dict[str, Any]:
    return next(e for e in events if e["type"] == "tool_result" and e["name"] == "schedule")


async def test_remind_me_in_20_minutes(app: Any, client: httpx.AsyncClient, hook: Recorder) -> None:
    await _notifier(client, "phone", hook.url)
    await client.patch("/config", json={"default_notifier": "phone"})
    args = {"task": "call Anna", "in_minutes": 20, "reminder": True}
    install_model(app, scripted(("tool", "schedule", json.dumps(args)), "I will remind you."))
    need, events = await _chat_approving(app, client, "remind me in 20 minutes to call Anna")
    assert need["args"] == args
    result = _tool_result(events)
    assert not result.get("error") and "Scheduled automation" in result["result"]
    [a] = (await client.get("/automations")).json()["automations"]
    assert (a["name"], a["kind"], a["description"]) == (
        "Reminder: call Anna",
        "reminder",
        "Reminder: call Anna",
    )
    assert a["notifiers"] == ["phone"] and a["writable"] is False and a["enabled"] is True
    due = (parse_iso(a["next_run_at"]) - utcnow()).total_seconds()
    assert 19 * 60 < due <= 20 * 60
    assert parse_iso(a["trigger"]["once"]) == parse_iso(a["next_run_at"])
    # 20 minutes later (time travel): the reminder is delivered, no model asked
    install_model(app, scripted(("tool", "nonexistent", "{}")))  # would fail if used
    svc = app.state.container.automations
    await svc.store.update(a["id"], {"next_run_at": iso(utcnow())}, touch=False)
    await svc.tick()
    for _ in range(200):
        if hook.requests:
            break
        await asyncio.sleep(0.05)
    assert hook.requests[0][2] == {
        "notifier": "phone",
        "title": "Reminder: call Anna",
        "text": "Reminder: call Anna",
    }
    runs = (await client.get(f"/automations/{a['id']}/runs")).json()["runs"]
    assert runs[0]["status"] == "ok" and runs[0]["result"] == "Reminder: call Anna"
    assert runs[0]["fired_by"] == "schedule" and runs[0]["session_id"] is None
    assert runs[0]["usage"] is None
    after = (await client.get(f"/automations/{a['id']}")).json()
    assert after["enabled"] is False and after["next_run_at"] is None


async def test_every_weekday_task_with_a_named_notifier(
    app: Any, client: httpx.AsyncClient, hook: Recorder
) -> None:
    await _notifier(client, "phone", hook.url)
    await _notifier(client, "desk", hook.url)
    await client.patch("/config", json={"default_notifier": "phone"})
    args = {"task": "Send me the weather forecast.", "cron": "0 7 * * 1-5", "notifier": "desk"}
    install_model(app, scripted(("tool", "schedule", json.dumps(args)), "Done."))
    _, events = await _chat_approving(app, client, "every weekday at 7 send me the weather")
    assert "cron '0 7 * * 1-5'" in _tool_result(events)["result"]
    [a] = (await client.get("/automations")).json()["automations"]
    assert a["kind"] == "task" and a["description"] == "Send me the weather forecast."
    assert a["trigger"] == {"type": "time", "cron": "0 7 * * 1-5"} and a["notifiers"] == ["desk"]
    # the task is the agent's each time; its answer is what the notifier gets
    install_model(app, scripted("Sunny, 21 degrees."))
    await client.post(f"/automations/{a['id']}/run")
    for _ in range(200):
        if hook.requests:
            break
        await asyncio.sleep(0.05)
    assert hook.requests[0][2]["text"] == "Sunny, 21 degrees."


async def test_denied_schedules_nothing(
    app: Any, client: httpx.AsyncClient, hook: Recorder
) -> None:
    await _notifier(client, "phone", hook.url)
    args = {"task": "call Anna", "in_minutes": 5, "reminder": True, "notifier": "phone"}
    install_model(app, scripted(("tool", "schedule", json.dumps(args)), "OK."))
    await _chat_approving(app, client, "remind me", approved=False)
    assert (await client.get("/automations")).json()["automations"] == []


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ({"task": "call Anna", "in_minutes": 5, "reminder": True}, "no default notifier"),
        ({"task": "x", "in_minutes": 5, "notifier": "nope"}, "no notifier named 'nope'"),
        ({"task": "x", "in_minutes": 5, "cron": "0 7 * * *", "notifier": "phone"}, "exactly one"),
        ({"task": "x", "cron": "61 * * * *", "notifier": "phone"}, "minute must be 0-59"),
        ({"task": "x", "at": "2020-01-01T10:00", "notifier": "phone"}, "is in the past"),
        ({"task": "x", "in_minutes": 0, "notifier": "phone"}, "in_minutes must be"),
    ],
)
async def test_refusals_are_the_tool_result(
    app: Any, client: httpx.AsyncClient, hook: Recorder, args: dict[str, Any], says: str
) -> None:
    await _notifier(client, "phone", hook.url)
    install_model(app, scripted(("tool", "schedule", json.dumps(args)), "Sorry."))
    sid = await new_session(client)
    await client.post(
        "/chat/message", json={"message": "schedule", "session_id": sid, "skip_approvals": True}
    )
    result = _tool_result(await events_until(app, sid, "run_finished", timeout=20))
    assert result["error"] is True and says in result["result"], result
    assert (await client.get("/automations")).json()["automations"] == []


async def test_a_read_only_automation_cannot_schedule(
    app: Any, client: httpx.AsyncClient, hook: Recorder
) -> None:
    await _notifier(client, "phone", hook.url)
    args = {"task": "call Anna", "in_minutes": 5, "reminder": True, "notifier": "phone"}
    install_model(app, scripted(("tool", "schedule", json.dumps(args)), "Could not."))
    body = {"name": "Auto", "description": "Schedule things.", "trigger": never_soon()}
    aid = (await client.post("/automations", json=body)).json()["id"]
    await client.post(f"/automations/{aid}/run")
    for _ in range(200):
        got = (await client.get(f"/automations/{aid}")).json()
        if got["runs"] and got["runs"][0]["status"] != "running":
            break
        await asyncio.sleep(0.05)
    assert [a["id"] for a in (await client.get("/automations")).json()["automations"]] == [aid]
    replay = await app.state.container.events.replay(got["session_id"], 0)
    result = next(e.data for e in replay if e.type == "tool_result")
    assert result["name"] == "schedule" and "not writable" in result["result"]
