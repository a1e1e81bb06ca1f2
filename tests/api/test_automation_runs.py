"""GET /automations/{id}/runs (issue 11): a paginated run history with what
started each run, the session it ran in, its usage and every notifier's
delivery; a failing notifier is recorded and retried without losing the output."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.conftest import API_KEY
from tests.support.chat_models import install_model, scripted
from tests.support.fake_http import recording_server
from tests.support.triggers import never_soon

from famulus.settings import Settings
from famulus.timeutil import iso, utcnow


@pytest.fixture
def settings(home: Path, tmp_path: Path) -> Settings:
    return Settings(
        home=home,
        api_key=API_KEY,  # type: ignore[arg-type]
        project_dir=tmp_path / "project",
        notify_retry_delays_s=[0.05, 0.05],
    )


async def _create(client: httpx.AsyncClient, **over: Any) -> dict:
    body = {"name": "Hist", "description": "Report.", "trigger": never_soon(), **over}
    r = await client.post("/automations", json=body)
    assert r.status_code == 201, r.text
    return r.json()


async def _history(client: httpx.AsyncClient, aid: int, n: int, **params: Any) -> dict:
    """The run history once ``n`` runs have ended and their deliveries are final."""
    for _ in range(300):
        body = (await client.get(f"/automations/{aid}/runs", params=params)).json()
        ended = [r for r in body["runs"] if r["status"] != "running"]
        settled = all(
            d["status"] in ("delivered", "failed") for r in ended for d in r["deliveries"]
        )
        if (
            len(ended) >= n
            and settled
            and not (await client.get(f"/automations/{aid}")).json()["running"]
        ):
            return body
        await asyncio.sleep(0.05)
    raise AssertionError(f"runs did not end: {body}")


async def test_run_history_shows_cause_session_usage_and_deliveries(
    app: Any, client: httpx.AsyncClient
) -> None:
    install_model(app, scripted("All quiet today."))
    calls = {"n": 0}

    def flaky(method: str, path: str, body: Any) -> tuple[int, Any]:
        calls["n"] += 1
        return (503, {}) if calls["n"] == 1 else (200, {})

    with recording_server(lambda m, p, b: (200, {})) as good, recording_server(flaky) as bad:
        for name, url in (("good", good.url), ("bad", bad.url)):
            await client.post(
                "/notifiers/configs", json={"name": name, "type": "webhook", "config": {"url": url}}
            )
        a = await _create(client, notifiers=["good", "bad"])
        await client.post(f"/automations/{a['id']}/run")
        body = await _history(client, a["id"], 1)
    assert body["total"] == 1
    run = body["runs"][0]
    session_id = (await client.get(f"/automations/{a['id']}")).json()["session_id"]
    assert run["fired_by"] == "manual" and run["session_id"] == session_id
    assert run["status"] == "ok" and run["result"] == "All quiet today."
    assert run["started_at"] <= run["finished_at"]
    usage = run["usage"]
    assert set(usage) == {"prompt_tokens", "completion_tokens", "cache_read_tokens", "cost"}
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0 and usage["cost"] == 0
    by_name = {d["notifier"]: d for d in run["deliveries"]}
    assert by_name["good"]["status"] == "delivered" and by_name["good"]["attempts"] == 1
    # the failing notifier was recorded, retried with backoff, and got the output
    assert by_name["bad"]["status"] == "delivered" and by_name["bad"]["attempts"] == 2
    assert [t["status"] for t in by_name["bad"]["tries"]] == ["error", "ok"]
    assert "503" in by_name["bad"]["tries"][0]["error"]
    assert bad.requests[-1][2]["text"] == "All quiet today."


async def test_fired_by_schedule_catch_up_calendar(app: Any, client: httpx.AsyncClient) -> None:
    install_model(app, scripted("done"))
    svc = app.state.container.automations
    on_time, missed = await _create(client, name="on time"), await _create(client, name="missed")
    # due a moment ago (the server was up): schedule; due before start-up: catch-up
    await asyncio.sleep(0.01)
    await svc.store.update(on_time["id"], {"next_run_at": iso(utcnow())})
    await svc.store.update(missed["id"], {"next_run_at": iso(svc.started_at - timedelta(hours=3))})
    await svc.tick()
    assert (await _history(client, on_time["id"], 1))["runs"][0]["fired_by"] == "schedule"
    assert (await _history(client, missed["id"], 1))["runs"][0]["fired_by"] == "catch_up"
    row = await svc.get(on_time["id"])
    assert await svc.fire(row, "Report.\n\n(an event)") is not None
    runs = (await _history(client, on_time["id"], 2))["runs"]
    assert [r["fired_by"] for r in runs] == ["calendar", "schedule"]


async def test_run_history_pages_newest_first(app: Any, client: httpx.AsyncClient) -> None:
    install_model(app, scripted("one", "two", "three"))
    a = await _create(client)
    ids = []
    for n in range(3):
        ids.append((await client.post(f"/automations/{a['id']}/run")).json()["run_id"])
        await _history(client, a["id"], n + 1)
    first = (await client.get(f"/automations/{a['id']}/runs", params={"limit": 2})).json()
    assert first["total"] == 3 and [r["id"] for r in first["runs"]] == ids[::-1][:2]
    rest = (
        await client.get(f"/automations/{a['id']}/runs", params={"limit": 2, "offset": 2})
    ).json()
    assert rest["total"] == 3 and [r["id"] for r in rest["runs"]] == [ids[0]]
    assert [r["result"] for r in first["runs"] + rest["runs"]] == ["three", "two", "one"]
    assert (
        await client.get(f"/automations/{a['id']}/runs", params={"limit": 0})
    ).status_code == 422
    assert (await client.get("/automations/999/runs")).status_code == 404
