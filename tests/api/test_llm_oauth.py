# ruff: noqa: F811  (pytest fixtures imported from tests.support.llm_fixtures)
"""The openai-codex sign-in end to end against a loopback authorization server.

The test "browser" opens the start URL on the fake authorization server, which
redirects (with code and state) to famulus's loopback listener; the listener
exchanges the code with the PKCE verifier at the fake token endpoint.
"""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from pydantic_ai.models.openai_codex import OpenAICodexModel
from tests.support.llm_fakes import FakeState
from tests.support.llm_fixtures import clean_env, fake, llm_settings  # noqa: F401

from famulus.errors import NotConfigured
from famulus.llm.oauth import SECRET_NAME
from famulus.settings import Settings

START = "/providers/openai-codex/oauth/browser/start"
STATUS = "/providers/openai-codex/oauth/status"


@pytest.fixture
def settings(llm_settings: Settings) -> Settings:
    return llm_settings


async def _browser(url: str) -> httpx.Response:
    async with httpx.AsyncClient(follow_redirects=True, timeout=10) as browser:
        return await browser.get(url)


async def _sign_in(client: httpx.AsyncClient) -> dict[str, Any]:
    r = await client.post(START)
    assert r.status_code == 200, r.text
    started = r.json()
    page = await _browser(started["url"])
    assert page.status_code == 200, page.text
    return started


async def test_status_starts_idle(client: httpx.AsyncClient) -> None:
    r = await client.get(STATUS)
    assert r.status_code == 200 and r.json() == {"status": "idle", "connected": False}


async def test_full_flow_connects_and_the_model_is_usable(
    client: httpx.AsyncClient, fake: tuple[str, FakeState], settings: Settings, app: Any
) -> None:
    base, state = fake
    r = await client.post(START)
    started = r.json()
    assert started["status"] == "pending" and started["expires_at"].endswith("Z")
    url = urlsplit(started["url"])
    assert f"{url.scheme}://{url.netloc}{url.path}" == settings.codex_auth_url
    q = {k: v[0] for k, v in parse_qs(url.query).items()}
    assert q["response_type"] == "code" and q["code_challenge_method"] == "S256"
    assert q["client_id"] == settings.codex_client_id
    assert q["redirect_uri"].startswith("http://127.0.0.1:") and q["redirect_uri"].endswith(
        "/auth/callback"
    )
    assert q["state"] and q["code_challenge"] and "offline_access" in q["scope"]
    assert (await client.get(STATUS)).json() == {"status": "pending", "connected": False}

    page = await _browser(started["url"])
    assert page.status_code == 200 and "signed in" in page.text
    token_call = state.find("/oauth/token")[-1]
    form = {k: v[0] for k, v in parse_qs(token_call.body.decode()).items()}
    assert form["grant_type"] == "authorization_code" and form["code_verifier"]

    assert (await client.get(STATUS)).json() == {"status": "connected", "connected": True}
    stored = json.loads(settings.secrets_file.read_text())[SECRET_NAME]
    assert stored["access_token"] == "access-good-1" and stored["refresh_token"] == "refresh-1"
    assert stored["account_id"] == "acct-123"
    providers = {p["id"]: p for p in (await client.get("/providers")).json()["providers"]}
    assert providers["openai-codex"]["connected"] is True
    assert providers["openai-codex"]["key_hint"] is None
    for path in ("/providers", "/config", "/models", STATUS):
        assert "access-good-1" not in (await client.get(path)).text

    # the sign-in made gpt-5-codex... usable: choose it and resolve it
    r = await client.patch("/config", json={"chat_model": "openai-codex:gpt-5-codex"})
    assert r.status_code == 200, r.text
    resolved = await app.state.container.llm.resolve("chat")
    assert resolved.provider == "openai-codex" and isinstance(resolved.model, OpenAICodexModel)
    assert resolved.model.base_url.rstrip("/") == f"{base}/codex"

    # the listener is gone after the flow
    port = urlsplit(q["redirect_uri"]).port
    with pytest.raises(httpx.ConnectError):
        await _browser(f"http://127.0.0.1:{port}/auth/callback")

    r = await client.delete("/providers/openai-codex")
    assert r.json() == {"status": "disconnected", "provider": "openai-codex"}
    assert (await client.get(STATUS)).json() == {"status": "idle", "connected": False}


async def test_refresh_before_expiry(
    client: httpx.AsyncClient, fake: tuple[str, FakeState], settings: Settings, app: Any
) -> None:
    _, state = fake
    await _sign_in(client)
    llm = app.state.container.llm
    assert await llm.credential("openai-codex") == "access-good-1"  # fresh: no refresh

    secrets = app.state.container.secrets
    secrets.set(SECRET_NAME, {**secrets.get(SECRET_NAME), "expires_at": time.time() + 120})
    assert await llm.credential("openai-codex") == "access-good-2"
    refresh = state.find("/oauth/token")[-1]
    form = {k: v[0] for k, v in parse_qs(refresh.body.decode()).items()}
    assert form == {
        "grant_type": "refresh_token",
        "refresh_token": "refresh-1",
        "client_id": settings.codex_client_id,
    }
    stored = secrets.get(SECRET_NAME)
    assert stored["refresh_token"] == "refresh-2" and stored["expires_at"] > time.time() + 3000


async def test_expired_token_with_a_dead_refresh_token(
    client: httpx.AsyncClient, fake: tuple[str, FakeState], app: Any
) -> None:
    _, state = fake
    await _sign_in(client)
    await client.patch("/config", json={"chat_model": "gpt-5-codex"})
    secrets = app.state.container.secrets
    secrets.set(SECRET_NAME, {**secrets.get(SECRET_NAME), "expires_at": time.time() - 10})
    state.refresh_fails = True
    llm = app.state.container.llm
    with pytest.raises(NotConfigured) as info:
        await llm.resolve("chat")
    assert "sign in again" in info.value.detail
    body = (await client.get(STATUS)).json()
    assert body["status"] == "expired" and body["connected"] is False and body["error"]


async def test_a_pending_flow_expires_after_ten_minutes(
    client: httpx.AsyncClient, app: Any
) -> None:
    r = await client.post(START)
    oauth = app.state.container.llm.oauth
    oauth._flow.expires_at = time.time() - 1  # as if 10 minutes had passed
    body = (await client.get(STATUS)).json()
    assert body["status"] == "expired" and body["connected"] is False
    assert "10 minutes" in body["error"]
    # the listener closed: the late redirect finds nobody
    with pytest.raises(httpx.ConnectError):
        await _browser(r.json()["url"])


async def test_refused_sign_in_reports_error(
    client: httpx.AsyncClient, fake: tuple[str, FakeState]
) -> None:
    _, state = fake
    state.oauth_error = "access_denied"
    r = await client.post(START)
    page = await _browser(r.json()["url"])
    assert page.status_code == 400
    body = (await client.get(STATUS)).json()
    assert body["status"] == "error" and "access_denied" in body["error"]
    assert body["connected"] is False
    # a new start recovers
    state.oauth_error = None
    await _sign_in(client)
    assert (await client.get(STATUS)).json()["status"] == "connected"


async def test_wrong_state_is_rejected_and_flow_stays_pending(
    client: httpx.AsyncClient,
) -> None:
    r = await client.post(START)
    q = {k: v[0] for k, v in parse_qs(urlsplit(r.json()["url"]).query).items()}
    forged = f"{q['redirect_uri']}?code=code-0&state=forged"
    page = await _browser(forged)
    assert page.status_code == 400 and "state" in page.text
    assert (await client.get(STATUS)).json()["status"] == "pending"
    other = await _browser(q["redirect_uri"].replace("/auth/callback", "/other"))
    assert other.status_code == 404


async def test_codex_model_calls_the_responses_api_with_the_token(
    client: httpx.AsyncClient, fake: tuple[str, FakeState], app: Any, allow_model_requests: None
) -> None:
    from pydantic_ai import Agent

    _, state = fake
    await _sign_in(client)
    # the first sign-in makes the provider's default the chat model
    assert (await client.get("/config")).json()["chat_model"] == "gpt-5-codex"
    resolved = await app.state.container.llm.resolve("chat")
    result = await Agent(resolved.model).run("hi")
    assert result.output == "Hello from the fake model."
    sent = state.find("/codex/responses")[-1]
    assert sent.headers["authorization"] == "Bearer access-good-1"
    assert sent.headers["chatgpt-account-id"] == "acct-123"
    assert json.loads(sent.body)["model"] == "gpt-5-codex"


async def test_busy_callback_port_is_409(client: httpx.AsyncClient, settings: Settings) -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        settings.codex_callback_port = busy.getsockname()[1]
        settings_host_port = settings.codex_callback_port
        r = await client.post(START)
    assert r.status_code == 409 and str(settings_host_port) in r.json()["detail"]
