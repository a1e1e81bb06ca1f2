"""The apprise notifier (issue 11): one URL for a hundred services. Its URL
is a secret (kept in the secrets file, shown only as a hint), checked with
apprise when saved, and a failing send is recorded and retried like any
notifier's. apprise's json:// posts to a real local server here."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.conftest import API_KEY
from tests.support.chat_models import install_model, scripted
from tests.support.fake_http import recording_server
from tests.support.live import free_port
from tests.support.triggers import never_soon

from famulus.settings import Settings


@pytest.fixture
def settings(home: Path, tmp_path: Path) -> Settings:
    return Settings(
        home=home,
        api_key=API_KEY,  # type: ignore[arg-type]
        project_dir=tmp_path / "project",
        notify_retry_delays_s=[0.05, 0.05],
    )


def _apprise(url: str, path: str = "/hook") -> str:
    return "json://" + url.removeprefix("http://") + path


def _secrets(settings: Settings) -> dict[str, Any]:
    return json.loads(settings.secrets_file.read_text()) if settings.secrets_file.exists() else {}


async def test_apprise_url_is_a_secret_and_delivers(
    client: httpx.AsyncClient, settings: Settings
) -> None:
    with recording_server(lambda m, p, b: (200, {})) as fake:
        url = _apprise(fake.url, "/secret-token-path")
        r = await client.post(
            "/notifiers/configs", json={"name": "push", "type": "apprise", "config": {"url": url}}
        )
        assert r.status_code == 201, r.text
        assert r.json()["config"] == {"url_hint": "json://…path"}
        listed = await client.get("/notifiers/configs")
        assert "secret-token" not in listed.text and "secret-token" not in r.text
        assert _secrets(settings)["notifier:push"] == {"url": url}
        assert (await client.post("/notifiers/configs/push/test")).json() == {"status": "sent"}
    method, path, body = fake.requests[0]
    assert (method, path) == ("POST", "/secret-token-path")
    assert body["title"] == "famulus test" and "test message" in body["message"]


async def test_patch_and_delete_move_the_secret(
    client: httpx.AsyncClient, settings: Settings
) -> None:
    with recording_server(lambda m, p, b: (200, {})) as fake:
        await client.post(
            "/notifiers/configs",
            json={"name": "push", "type": "apprise", "config": {"url": _apprise(fake.url, "/a")}},
        )
        new = _apprise(fake.url, "/bbbbbb")
        r = await client.patch("/notifiers/configs/push", json={"config": {"url": new}})
        assert r.status_code == 200 and r.json()["config"] == {"url_hint": "json://…bbbb"}
        await client.post("/notifiers/configs/push/test")
        assert fake.requests[-1][1] == "/bbbbbb"
        # an empty config change keeps the stored URL (it is merged, then checked)
        r = await client.patch("/notifiers/configs/push", json={"config": {}})
        assert r.status_code == 200 and _secrets(settings)["notifier:push"] == {"url": new}
        hint = await client.patch("/notifiers/configs/push", json={"config": {"url_hint": "x"}})
        assert hint.status_code == 422
        r = await client.patch(
            "/notifiers/configs/push", json={"type": "webhook", "config": {"url": fake.url}}
        )
        assert r.json()["config"] == {"url": fake.url}
        assert "notifier:push" not in _secrets(settings)
        await client.patch(
            "/notifiers/configs/push", json={"type": "apprise", "config": {"url": new}}
        )
        assert (await client.delete("/notifiers/configs/push")).status_code == 200
        assert "notifier:push" not in _secrets(settings)


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("foo://bar/baz", "'foo://' is not a service apprise knows"),
        ("just words", "must be an apprise URL such as ntfy://ntfy.sh/my-topic"),
        ("discord://abc", "apprise cannot use this discord:// URL: An invalid Discord Webhook"),
        ("json://", "apprise cannot use this json:// URL"),
    ],
)
async def test_bad_apprise_url_is_422(client: httpx.AsyncClient, url: str, says: str) -> None:
    r = await client.post(
        "/notifiers/configs", json={"name": "p", "type": "apprise", "config": {"url": url}}
    )
    assert r.status_code == 422, r.text
    assert says in r.json()["detail"] and r.json()["errors"][0]["loc"] == ["body", "config", "url"]


async def _final(client: httpx.AsyncClient, aid: int) -> dict:
    for _ in range(300):
        runs = (await client.get(f"/automations/{aid}/runs")).json()["runs"]
        if (
            runs
            and runs[0]["deliveries"]
            and runs[0]["deliveries"][0]["status"]
            in (
                "delivered",
                "failed",
            )
        ):
            return runs[0]
        await asyncio.sleep(0.05)
    raise AssertionError("the delivery never became final")


async def test_apprise_failures_are_retried_or_final(app: Any, client: httpx.AsyncClient) -> None:
    install_model(app, scripted("The output."))
    answers = iter([503, 200, 400])

    with recording_server(lambda m, p, b: (next(answers), {})) as fake:
        await client.post(
            "/notifiers/configs",
            json={"name": "push", "type": "apprise", "config": {"url": _apprise(fake.url)}},
        )
        body = {"name": "A", "description": "d", "trigger": never_soon(), "notifiers": ["push"]}
        aid = (await client.post("/automations", json=body)).json()["id"]
        # 503 is passing: retried and delivered on the second try
        await client.post(f"/automations/{aid}/run")
        run = await _final(client, aid)
        d = run["deliveries"][0]
        assert (d["status"], d["attempts"]) == ("delivered", 2)
        assert "error=503" in d["tries"][0]["error"] and run["status"] == "ok"
        # 400 is final at once; the output stays, the problem is added under it
        await client.post(f"/automations/{aid}/run")
        run = await _final(client, aid)
        d = run["deliveries"][0]
        assert (d["status"], d["attempts"]) == ("failed", 1) and "error=400" in d["last_error"]
        assert run["status"] == "error" and run["result"].startswith("The output.")
        assert "Delivery problem: push: apprise could not deliver" in run["result"]
    assert [b["message"] for _, _, b in fake.requests] == ["The output."] * 3


async def test_unreachable_apprise_target_is_retried(app: Any, client: httpx.AsyncClient) -> None:
    install_model(app, scripted("Hi."))
    url = f"json://127.0.0.1:{free_port()}/hook"
    await client.post(
        "/notifiers/configs", json={"name": "push", "type": "apprise", "config": {"url": url}}
    )
    body = {"name": "A", "description": "d", "trigger": never_soon(), "notifiers": ["push"]}
    aid = (await client.post("/automations", json=body)).json()["id"]
    await client.post(f"/automations/{aid}/run")
    run = await _final(client, aid)
    d = run["deliveries"][0]
    assert (d["status"], d["attempts"]) == ("failed", 3)  # every try made, then final
    assert all(t["status"] == "error" for t in d["tries"]) and run["result"].startswith("Hi.")


async def test_a_reminder_does_not_say_itself_twice(client: httpx.AsyncClient) -> None:
    with recording_server(lambda m, p, b: (200, {})) as fake:
        await client.post(
            "/notifiers/configs",
            json={"name": "push", "type": "apprise", "config": {"url": _apprise(fake.url)}},
        )
        text = "Reminder: call Anna"
        body = {"name": text, "description": text, "kind": "reminder", "trigger": never_soon()}
        aid = (await client.post("/automations", json={**body, "notifiers": ["push"]})).json()["id"]
        await client.post(f"/automations/{aid}/run")
        await _final(client, aid)
    assert (fake.requests[0][2]["title"], fake.requests[0][2]["message"]) == ("", text)
