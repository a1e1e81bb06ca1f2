# ruff: noqa: F811  (pytest fixtures imported from tests.support.llm_fixtures)
"""GET /services, connect (checked against the service) and disconnect."""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
import pytest
from tests.support.llm_fakes import FakeState
from tests.support.llm_fixtures import clean_env, fake, llm_settings  # noqa: F401

from famulus.settings import Settings

BOT_TOKEN = "123456:good-telegram-token-AbCd"
EXA_KEY = "exa-good-0123456789-beef"


@pytest.fixture
def settings(llm_settings: Settings) -> Settings:
    return llm_settings


async def _services(client: httpx.AsyncClient) -> dict[str, dict[str, Any]]:
    r = await client.get("/services")
    assert r.status_code == 200
    return {s["id"]: s for s in r.json()["services"]}


async def test_list_shape(client: httpx.AsyncClient) -> None:
    services = await _services(client)
    assert list(services) == ["web-search", "telegram"]
    for s in services.values():
        assert set(s) == {"id", "name", "connected", "key_hint", "from_env"}
        assert s["connected"] is False


async def test_connect_checks_and_stores(
    client: httpx.AsyncClient,
    fake: tuple[str, FakeState],
    settings: Settings,
    app: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    _, state = fake
    r = await client.post("/services/telegram/connect", json={"api_key": BOT_TOKEN})
    assert r.status_code == 200 and r.json() == {"status": "connected", "service": "telegram"}
    assert state.find("/getMe")
    r = await client.post("/services/web-search/connect", json={"api_key": EXA_KEY})
    assert r.status_code == 200 and r.json() == {"status": "connected", "service": "web-search"}
    assert state.find("/exa/search")[-1].headers["x-api-key"] == EXA_KEY

    services = await _services(client)
    assert services["telegram"]["connected"] and services["telegram"]["key_hint"] == "123…AbCd"
    assert services["web-search"]["key_hint"] == "exa…beef"
    secrets = json.loads(settings.secrets_file.read_text())
    assert secrets["service:telegram"] == BOT_TOKEN
    llm = app.state.container.llm
    assert await llm.service_credential("telegram") == BOT_TOKEN
    assert await llm.service_credential("web-search") == EXA_KEY
    listing = (await client.get("/services")).text
    assert BOT_TOKEN not in listing and EXA_KEY not in listing
    assert BOT_TOKEN not in caplog.text  # the token is in the URL path; logs mask it

    r = await client.delete("/services/telegram")
    assert r.status_code == 200 and r.json() == {"status": "disconnected", "service": "telegram"}
    assert (await _services(client))["telegram"]["connected"] is False
    assert await llm.service_credential("telegram") is None


@pytest.mark.parametrize("service", ["telegram", "web-search"])
async def test_refused_key_is_502_and_nothing_stored(
    client: httpx.AsyncClient, settings: Settings, service: str
) -> None:
    r = await client.post(f"/services/{service}/connect", json={"api_key": "bad-token-xyz"})
    assert r.status_code == 502 and r.json()["code"] == "upstream_error"
    assert "401" in r.json()["detail"] and "bad-token-xyz" not in r.text
    assert (await _services(client))[service]["connected"] is False
    assert not settings.secrets_file.exists()


@pytest.mark.parametrize("service", ["telegram", "web-search"])
async def test_a_key_with_a_control_or_non_ascii_character_is_422(
    client: httpx.AsyncClient, settings: Settings, service: str
) -> None:
    for key in ("123:AB\tCdef", "123:AB\x00Cdef", "123:AB\x7fCdef", "123:ABCdéf"):
        r = await client.post(f"/services/{service}/connect", json={"api_key": key})
        assert r.status_code == 422 and r.json()["code"] == "invalid_request", r.text
        assert "no key has" in r.json()["detail"] and key not in r.text
    assert not settings.secrets_file.exists()


async def test_unknown_service_and_strict_body(client: httpx.AsyncClient) -> None:
    assert (await client.post("/services/nope/connect", json={"api_key": "x"})).status_code == 404
    assert (await client.delete("/services/nope")).status_code == 404
    for body in ({}, {"api_key": 1}, {"api_key": "x", "more": 1}):
        assert (await client.post("/services/telegram/connect", json=body)).status_code == 422


async def test_env_token(client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EXA_API_KEY", "exa-env-key-0000-1111")
    s = (await _services(client))["web-search"]
    assert s["connected"] and s["from_env"] and s["key_hint"] == "exa…1111"
