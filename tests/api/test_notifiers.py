"""Notifier types and configs, and real delivery: Telegram (local Bot API),
e-mail (a real SMTP server, aiosmtpd) and webhooks (a local HTTP server)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.conftest import API_KEY
from tests.support.fake_http import recording_server, telegram_route
from tests.support.smtp import Inbox, smtp_server
from tests.support.triggers import never_soon

from famulus.app import create_app
from famulus.settings import Settings

TOKEN = "123456:telegram-test-token"


@pytest.fixture
def smtp() -> Iterator[tuple[Inbox, int]]:
    with smtp_server() as server:
        yield server


@pytest.fixture
def telegram() -> Iterator[Any]:
    with recording_server(telegram_route(TOKEN)) as rec:
        yield rec


@pytest.fixture
async def nclient(
    tmp_path: Path, smtp: tuple[Inbox, int], telegram: Any
) -> AsyncIterator[httpx.AsyncClient]:
    settings = Settings(
        home=tmp_path / "home",
        api_key=API_KEY,
        project_dir=tmp_path,  # type: ignore[arg-type]
        smtp_host="127.0.0.1",
        smtp_port=smtp[1],
        smtp_from="famulus@example.org",
        telegram_base_url=telegram.url,
    )
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://t", headers={"Authorization": f"Bearer {API_KEY}"}
        ) as c:
            yield c


async def test_types(nclient: httpx.AsyncClient) -> None:
    r = await nclient.get("/notifiers/types")
    assert r.json() == {
        "types": {
            "telegram": {"fields": ["chat_id"]},
            "email": {"fields": ["to"]},
            "webhook": {"fields": ["url"]},
            "apprise": {"fields": ["url"]},
        }
    }


async def test_create_list_delete(nclient: httpx.AsyncClient) -> None:
    r = await nclient.post(
        "/notifiers/configs", json={"name": "me", "type": "telegram", "config": {"chat_id": "42"}}
    )
    assert r.status_code == 201
    assert r.json()["config"] == {"chat_id": "42"} and r.json()["created_at"].endswith("Z")
    dup = await nclient.post(
        "/notifiers/configs", json={"name": "me", "type": "webhook", "config": {"url": "http://x"}}
    )
    assert dup.status_code == 409
    assert [c["name"] for c in (await nclient.get("/notifiers/configs")).json()["configs"]] == [
        "me"
    ]
    assert (await nclient.delete("/notifiers/configs/me")).json() == {"status": "deleted"}
    assert (await nclient.delete("/notifiers/configs/me")).status_code == 404
    assert (await nclient.post("/notifiers/configs/me/test")).status_code == 404


@pytest.mark.parametrize(
    "body",
    [
        {"name": "a", "type": "pager", "config": {}},
        {"name": "a", "type": "telegram", "config": {}},
        {"name": "a", "type": "telegram", "config": {"chat_id": 5}},
        {"name": "a", "type": "email", "config": {"to": "not-an-address"}},
        {"name": "a", "type": "webhook", "config": {"url": "ftp://x"}},
        {"name": "a", "type": "webhook", "config": {"url": "http://x", "extra": 1}},
        {"name": "bad name!", "type": "webhook", "config": {"url": "http://x"}},
        {"name": "a", "type": "webhook"},
    ],
)
async def test_bad_configs_are_422(nclient: httpx.AsyncClient, body: dict) -> None:
    r = await nclient.post("/notifiers/configs", json=body)
    assert r.status_code == 422, r.text
    assert r.json()["code"] == "invalid_request"


async def test_email_delivery(nclient: httpx.AsyncClient, smtp: tuple[Inbox, int]) -> None:
    await nclient.post(
        "/notifiers/configs",
        json={"name": "mail", "type": "email", "config": {"to": "me@example.org"}},
    )
    r = await nclient.post("/notifiers/configs/mail/test")
    assert r.json() == {"status": "sent"}
    msg = smtp[0].messages[0]
    assert msg["To"] == "me@example.org" and msg["From"] == "famulus@example.org"
    assert "test message" in msg.get_payload()


async def test_webhook_delivery_and_failure(nclient: httpx.AsyncClient) -> None:
    with recording_server(lambda m, p, b: (200 if p == "/ok" else 500, {})) as hook:
        await nclient.post(
            "/notifiers/configs",
            json={"name": "ok", "type": "webhook", "config": {"url": hook.url + "/ok"}},
        )
        await nclient.post(
            "/notifiers/configs",
            json={"name": "bad", "type": "webhook", "config": {"url": hook.url + "/bad"}},
        )
        assert (await nclient.post("/notifiers/configs/ok/test")).json() == {"status": "sent"}
        method, path, body = hook.requests[0]
        assert method == "POST" and body["notifier"] == "ok" and "test message" in body["text"]
        r = await nclient.post("/notifiers/configs/bad/test")
        assert r.status_code == 502 and "500" in r.json()["detail"]


async def test_telegram_delivery(nclient: httpx.AsyncClient, telegram: Any) -> None:
    await nclient.post(
        "/notifiers/configs", json={"name": "tg", "type": "telegram", "config": {"chat_id": "42"}}
    )
    r = await nclient.post("/notifiers/configs/tg/test")
    assert r.status_code == 503  # no bot token connected yet
    r = await nclient.post("/services/telegram/connect", json={"api_key": TOKEN})
    assert r.status_code == 200, r.text
    assert (await nclient.post("/notifiers/configs/tg/test")).json() == {"status": "sent"}
    sent = [req for req in telegram.requests if req[1].endswith("/sendMessage")]
    assert sent[-1][2]["chat_id"] == "42"
    await nclient.post(
        "/notifiers/configs",
        json={"name": "tgbad", "type": "telegram", "config": {"chat_id": "bad"}},
    )
    r = await nclient.post("/notifiers/configs/tgbad/test")
    assert r.status_code == 502 and "chat not found" in r.json()["detail"]


async def test_long_telegram_text_goes_as_several_messages(telegram: Any) -> None:
    from famulus.notify.senders import TELEGRAM_LIMIT, send_telegram

    paragraphs = [" ".join(f"word{i}-{j}" for j in range(60)) for i in range(25)]
    text = "\n\n".join(paragraphs)
    assert len(text) > 10_000
    await send_telegram(telegram.url, TOKEN, "42", text)
    parts = [req[2]["text"] for req in telegram.requests if req[1].endswith("/sendMessage")]
    assert len(parts) >= 3 and all(len(p) <= TELEGRAM_LIMIT for p in parts)
    assert " ".join(" ".join(parts).split()) == " ".join(text.split())
    # cut between paragraphs, never inside a word
    assert all(p.endswith("-59") for p in parts)
    # a single overlong word is the only thing cut hard
    telegram.requests.clear()
    await send_telegram(telegram.url, TOKEN, "42", "x" * 10_000)
    parts = [req[2]["text"] for req in telegram.requests if req[1].endswith("/sendMessage")]
    assert [len(p) for p in parts] == [4096, 4096, 1808]


async def test_names_with_control_characters_are_422(nclient: httpx.AsyncClient) -> None:
    r = await nclient.post(
        "/notifiers/configs",
        json={"name": "me\r\nBcc: x", "type": "webhook", "config": {"url": "http://x"}},
    )
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "name"]
    r = await nclient.post(
        "/notifiers/configs", json={"name": "me", "type": "webhook", "config": {"url": "ftp://x"}}
    )
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "config", "url"]


async def test_email_subject_is_one_line(smtp: tuple[Inbox, int], tmp_path: Path) -> None:
    from famulus.notify.senders import send_email

    settings = Settings(
        home=tmp_path / "home",
        api_key=API_KEY,
        project_dir=tmp_path,  # type: ignore[arg-type]
        smtp_host="127.0.0.1",
        smtp_port=smtp[1],
        smtp_from="famulus@example.org",
    )
    await send_email(settings, "me@example.org", "evil\r\nBcc: evil@example.org\tx", "hi")
    msg = smtp[0].messages[-1]
    assert msg["Subject"] == "evil Bcc: evil@example.org x" and msg["Bcc"] is None


def _smtp_settings(tmp_path: Path, port: int, sender: str = "famulus@example.org") -> Settings:
    return Settings(
        home=tmp_path / "home",
        api_key=API_KEY,
        project_dir=tmp_path,  # type: ignore[arg-type]
        smtp_host="127.0.0.1",
        smtp_port=port,
        smtp_from=sender,
    )


def _assert_dated_and_identified(msg: Any, domain: str) -> None:
    from email.utils import parsedate_to_datetime

    from famulus.timeutil import utcnow

    assert msg["Date"], "mail without a Date header"
    sent_at = parsedate_to_datetime(msg["Date"])
    assert sent_at.tzinfo is not None and abs((utcnow() - sent_at).total_seconds()) < 120
    mid = msg["Message-ID"]
    assert mid and mid.startswith("<") and mid.endswith(f"@{domain}>"), mid


async def test_notifier_mail_has_date_and_message_id(
    nclient: httpx.AsyncClient, smtp: tuple[Inbox, int]
) -> None:
    await nclient.post(
        "/notifiers/configs",
        json={"name": "mail", "type": "email", "config": {"to": "me@example.org"}},
    )
    assert (await nclient.post("/notifiers/configs/mail/test")).json() == {"status": "sent"}
    assert (await nclient.post("/notifiers/configs/mail/test")).json() == {"status": "sent"}
    first, second = smtp[0].messages[-2:]
    _assert_dated_and_identified(first, "example.org")
    _assert_dated_and_identified(second, "example.org")
    assert first["Message-ID"] != second["Message-ID"]


async def test_agent_send_mail_has_date_and_message_id(
    smtp: tuple[Inbox, int], tmp_path: Path
) -> None:
    """The agent's send_mail tool (integrations) goes out with the same headers."""
    from famulus.integrations.mail_tools import send_toolset

    tool = send_toolset(_smtp_settings(tmp_path, smtp[1], "alice@mail.example.net")).tools[
        "send_mail"
    ]
    assert await tool.function("bob@example.org", "Hi", "See you.") == "Sent to bob@example.org."  # type: ignore[call-arg]
    _assert_dated_and_identified(smtp[0].messages[-1], "mail.example.net")


async def _make(nclient: httpx.AsyncClient, name: str, type_: str, config: dict) -> None:
    r = await nclient.post(
        "/notifiers/configs", json={"name": name, "type": type_, "config": config}
    )
    assert r.status_code == 201, r.text


async def test_patch_changes_config_in_place(nclient: httpx.AsyncClient) -> None:
    await _make(nclient, "mail", "email", {"to": "old@example.org"})
    created = (await nclient.get("/notifiers/configs")).json()["configs"][0]
    r = await nclient.patch("/notifiers/configs/mail", json={"config": {"to": "new@example.org"}})
    assert r.status_code == 200, r.text
    assert r.json() == {**created, "config": {"to": "new@example.org"}}
    assert (await nclient.get("/notifiers/configs")).json()["configs"] == [r.json()]
    # the type can change too; then the config is the new type's, whole
    r = await nclient.patch(
        "/notifiers/configs/mail", json={"type": "telegram", "config": {"chat_id": "42"}}
    )
    assert r.status_code == 200 and r.json()["type"] == "telegram"
    assert r.json()["config"] == {"chat_id": "42"} and r.json()["name"] == "mail"


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({"config": {"to": "not-an-address"}}, ["body", "config", "to"]),
        ({"config": {"to": None}}, ["body", "config", "to"]),
        ({"config": {"url": "http://x"}}, ["body", "config", "url"]),
        ({"type": "webhook", "config": {"url": "ftp://x"}}, ["body", "config", "url"]),
        ({"type": "webhook"}, ["body", "config", "url"]),
        ({"type": "pager", "config": {}}, ["body", "type"]),
        ({"config": None}, ["body", "config"]),
        ({"name": "other"}, ["body", "name"]),
        ({}, None),
    ],
)
async def test_patch_bad_fields_are_422_naming_the_field(
    nclient: httpx.AsyncClient, body: dict, loc: list | None
) -> None:
    await _make(nclient, "mail", "email", {"to": "old@example.org"})
    r = await nclient.patch("/notifiers/configs/mail", json=body)
    assert r.status_code == 422, r.text
    assert r.json()["code"] == "invalid_request"
    if loc is not None:
        assert r.json()["errors"][0]["loc"] == loc
    # nothing changed
    assert (await nclient.get("/notifiers/configs")).json()["configs"][0]["config"] == {
        "to": "old@example.org"
    }


async def test_patch_unknown_notifier_is_404(nclient: httpx.AsyncClient) -> None:
    r = await nclient.patch("/notifiers/configs/nope", json={"config": {"to": "a@example.org"}})
    assert r.status_code == 404 and r.json()["code"] == "not_found"


async def test_patched_notifier_keeps_its_automations(
    nclient: httpx.AsyncClient, tmp_path: Path
) -> None:
    """An automation using the notifier is untouched and delivers to the new target."""
    from tests.support.chat_models import install_model, scripted

    with (
        recording_server(lambda m, p, b: (200, {})) as old,
        recording_server(lambda m, p, b: (200, {})) as new,
    ):
        await _make(nclient, "hook", "webhook", {"url": old.url})
        a = await nclient.post(
            "/automations",
            json={
                "name": "Brief",
                "description": "Summarize.",
                "trigger": never_soon(),
                "notifiers": ["hook"],
            },
        )
        aid = a.json()["id"]
        r = await nclient.patch("/notifiers/configs/hook", json={"config": {"url": new.url}})
        assert r.status_code == 200, r.text
        assert (await nclient.get(f"/automations/{aid}")).json()["notifiers"] == ["hook"]
        app = nclient._transport.app  # type: ignore[attr-defined]
        install_model(app, scripted("Changed target works."))
        await nclient.post(f"/automations/{aid}/run")
        for _ in range(300):
            body = (await nclient.get(f"/automations/{aid}")).json()
            if body["runs"] and body["runs"][0]["status"] != "running" and not body["running"]:
                break
            await asyncio.sleep(0.02)
        assert body["last_status"] == "ok", body
        assert [req[2]["text"] for req in new.requests] == ["Changed target works."]
        assert old.requests == []
