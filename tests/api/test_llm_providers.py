# ruff: noqa: F811  (pytest fixtures imported from tests.support.llm_fixtures)
"""GET /providers, connect and disconnect against a loopback fake of each provider."""

from __future__ import annotations

import json
import logging
import stat
from typing import Any

import httpx
import pytest
from tests.support.llm_fakes import FakeState
from tests.support.llm_fixtures import clean_env, fake, llm_settings  # noqa: F401

from famulus.llm import probe
from famulus.settings import Settings

OPENAI_KEY = "sk-good-openai-0123456789-7f3a"
ANTHROPIC_KEY = "sk-ant-good-abcdefghij-9d2c"
GOOGLE_KEY = "AIza-good-google-key-1234"


@pytest.fixture
def settings(llm_settings: Settings) -> Settings:
    return llm_settings


async def _providers(client: httpx.AsyncClient) -> dict[str, dict[str, Any]]:
    r = await client.get("/providers")
    assert r.status_code == 200
    return {p["id"]: p for p in r.json()["providers"]}


async def test_six_providers_with_the_contract_fields(client: httpx.AsyncClient) -> None:
    r = await client.get("/providers")
    assert r.status_code == 200
    items = r.json()["providers"]
    assert [p["id"] for p in items] == [
        "anthropic",
        "openai",
        "openai-codex",
        "google",
        "openrouter",
        "custom",
    ]
    for p in items:
        assert set(p) == {"id", "name", "auth_type", "connected", "key_hint", "from_env", "models"}
        assert p["connected"] is False and p["key_hint"] is None and p["from_env"] is False
    by_id = {p["id"]: p for p in items}
    assert by_id["openai-codex"]["auth_type"] == "oauth"
    assert by_id["anthropic"]["auth_type"] == "api_key"
    assert "claude-sonnet-4-5" in by_id["anthropic"]["models"]
    assert by_id["custom"]["models"] == []


async def test_providers_need_the_api_key(anon: httpx.AsyncClient) -> None:
    assert (await anon.get("/providers")).status_code == 401


async def test_connect_openai_checks_the_key_then_stores_it(
    client: httpx.AsyncClient, fake: tuple[str, FakeState], settings: Settings
) -> None:
    _, state = fake
    r = await client.post("/providers/openai/connect", json={"api_key": OPENAI_KEY})
    assert r.status_code == 200, r.text
    assert r.json() == {"status": "connected", "provider": "openai"}
    sent = state.find("/openai/v1/models")[-1]
    assert sent.headers["authorization"] == f"Bearer {OPENAI_KEY}"

    p = (await _providers(client))["openai"]
    assert p["connected"] is True and p["from_env"] is False
    assert p["key_hint"] == "sk-…7f3a"
    # The first connected provider's default model becomes the chat model.
    assert (await client.get("/config")).json()["chat_model"] == "gpt-4.1"
    # Stored owner-only.
    mode = stat.S_IMODE(settings.secrets_file.stat().st_mode)
    assert mode == 0o600
    assert json.loads(settings.secrets_file.read_text())["provider:openai"] == OPENAI_KEY


async def test_connect_anthropic_and_google_use_their_own_auth(
    client: httpx.AsyncClient, fake: tuple[str, FakeState]
) -> None:
    _, state = fake
    r = await client.post(
        "/providers/anthropic/connect",
        json={"api_key": ANTHROPIC_KEY, "chat_model": "claude-haiku-4-5"},
    )
    assert r.status_code == 200, r.text
    sent = state.find("/anthropic/v1/models")[-1]
    assert sent.headers["x-api-key"] == ANTHROPIC_KEY
    assert sent.headers["anthropic-version"]
    assert (await client.get("/config")).json()["chat_model"] == "claude-haiku-4-5"

    r = await client.post("/providers/google/connect", json={"api_key": GOOGLE_KEY})
    assert r.status_code == 200, r.text
    assert state.find("/google/v1beta/models")[-1].query["key"] == GOOGLE_KEY
    # A chat model was already set: connecting another provider keeps it.
    assert (await client.get("/config")).json()["chat_model"] == "claude-haiku-4-5"
    providers = await _providers(client)
    assert providers["google"]["connected"] and providers["anthropic"]["connected"]


@pytest.mark.parametrize("provider", ["openai", "anthropic", "google", "openrouter"])
async def test_a_refused_key_is_502_and_nothing_is_stored(
    client: httpx.AsyncClient, settings: Settings, provider: str
) -> None:
    r = await client.post(f"/providers/{provider}/connect", json={"api_key": "sk-bad-key-000000"})
    assert r.status_code == 502
    body = r.json()
    assert body["code"] == "upstream_error"
    assert "HTTP 40" in body["detail"]  # the provider's status and reason
    assert "sk-bad-key-000000" not in r.text
    assert (await _providers(client))[provider]["connected"] is False
    assert not settings.secrets_file.exists() or provider not in settings.secrets_file.read_text()
    assert (await client.get("/config")).json()["chat_model"] is None


async def test_the_provider_reason_is_passed_on(client: httpx.AsyncClient) -> None:
    r = await client.post("/providers/openai/connect", json={"api_key": "sk-wrong"})
    assert r.status_code == 502
    assert "Incorrect API key provided." in r.json()["detail"]


async def test_unreachable_and_slow_providers_are_502(
    client: httpx.AsyncClient,
    fake: tuple[str, FakeState],
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings.anthropic_base_url = "http://127.0.0.1:9"  # nothing listens on the discard port
    r = await client.post("/providers/anthropic/connect", json={"api_key": ANTHROPIC_KEY})
    assert r.status_code == 502 and "Could not reach" in r.json()["detail"]

    _, state = fake
    monkeypatch.setattr(probe, "TIMEOUT_S", 0.2)
    state.delay_s = 0.6
    r = await client.post("/providers/openai/connect", json={"api_key": OPENAI_KEY})
    assert r.status_code == 502 and "did not answer" in r.json()["detail"]
    assert (await _providers(client))["openai"]["connected"] is False


async def test_unknown_custom_and_oauth_providers_are_refused(client: httpx.AsyncClient) -> None:
    r = await client.post("/providers/nope/connect", json={"api_key": "x"})
    assert r.status_code == 404 and r.json()["code"] == "not_found"
    r = await client.post("/providers/custom/connect", json={"api_key": "x"})
    assert r.status_code == 422 and "/models/custom" in r.json()["detail"]
    r = await client.post("/providers/openai-codex/connect", json={"api_key": "x"})
    assert r.status_code == 422 and "oauth/browser/start" in r.json()["detail"]
    assert (await client.delete("/providers/nope")).status_code == 404


async def test_connect_body_is_strict(client: httpx.AsyncClient) -> None:
    for body in ({}, {"api_key": 5}, {"api_key": "x", "extra": 1}, {"api_key": ""}):
        r = await client.post("/providers/openai/connect", json=body)
        assert r.status_code == 422, body


async def test_a_chat_model_the_provider_does_not_offer_stores_nothing(
    client: httpx.AsyncClient, settings: Settings
) -> None:
    r = await client.post(
        "/providers/openai/connect", json={"api_key": OPENAI_KEY, "chat_model": "claude-haiku-4-5"}
    )
    assert r.status_code == 422
    assert (await _providers(client))["openai"]["connected"] is False
    # A model the provider listed at connect time (not in the catalog) is accepted.
    r = await client.post(
        "/providers/openai/connect", json={"api_key": OPENAI_KEY, "chat_model": "gpt-remote-only"}
    )
    assert r.status_code == 200
    assert (await client.get("/config")).json()["chat_model"] == "gpt-remote-only"


async def test_disconnect_forgets_the_key(client: httpx.AsyncClient, settings: Settings) -> None:
    await client.post("/providers/openai/connect", json={"api_key": OPENAI_KEY})
    r = await client.delete("/providers/openai")
    assert r.status_code == 200
    assert r.json() == {"status": "disconnected", "provider": "openai"}
    assert (await _providers(client))["openai"]["connected"] is False
    assert OPENAI_KEY not in settings.secrets_file.read_text()


async def test_keys_from_the_environment(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-v1-abcdef123456")
    monkeypatch.setenv("GOOGLE_API_KEY", "short")
    providers = await _providers(client)
    assert providers["openrouter"]["connected"] and providers["openrouter"]["from_env"]
    assert providers["openrouter"]["key_hint"] == "sk-…3456"
    assert providers["google"]["from_env"] and providers["google"]["key_hint"] == "…rt"
    # Disconnecting cannot remove an environment key: the provider stays connected.
    await client.delete("/providers/openrouter")
    assert (await _providers(client))["openrouter"]["connected"] is True


async def test_keys_never_appear_in_responses_or_logs(
    client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    await client.post("/providers/openai/connect", json={"api_key": OPENAI_KEY})
    await client.post("/providers/anthropic/connect", json={"api_key": "sk-ant-bad-zzzz"})
    await client.post("/providers/google/connect", json={"api_key": GOOGLE_KEY})
    texts = [
        (await client.get(path)).text for path in ("/providers", "/config", "/models", "/services")
    ]
    for text in texts:
        for key in (OPENAI_KEY, "sk-ant-bad-zzzz", GOOGLE_KEY):
            assert key not in text
    assert "/google/v1beta/models" in caplog.text  # the client did log the request ...
    for key in (OPENAI_KEY, "sk-ant-bad-zzzz", GOOGLE_KEY):  # ... but no key
        assert key not in caplog.text


@pytest.mark.parametrize(
    ("provider", "key", "path"),
    [
        ("openai", OPENAI_KEY, "/openai/v1/chat/completions"),
        ("openrouter", "sk-or-good-0000000000", "/openrouter/v1/chat/completions"),
        ("anthropic", ANTHROPIC_KEY, "/anthropic/v1/messages"),
        ("google", GOOGLE_KEY, "/google/v1beta/models/gemini-2.5-pro:generateContent"),
    ],
)
async def test_resolved_models_talk_to_the_configured_base_url(
    client: httpx.AsyncClient,
    app: Any,
    fake: tuple[str, FakeState],
    allow_model_requests: None,
    provider: str,
    key: str,
    path: str,
) -> None:
    from pydantic_ai import Agent

    _, state = fake
    r = await client.post(f"/providers/{provider}/connect", json={"api_key": key})
    assert r.status_code == 200, r.text
    resolved = await app.state.container.llm.resolve("chat")
    assert resolved.provider == provider
    result = await Agent(resolved.model).run("hi")
    assert result.output == "Hello from the fake model."
    assert state.find(path), [r.path for r in state.requests]


async def test_a_corrupt_secrets_file_is_set_aside_at_start_up(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    from tests.conftest import API_KEY

    from famulus.app import create_app

    settings.ensure_home()
    garbage = '{"provider:openai": "sk-precious-key-0000", truncated'
    settings.secrets_file.write_text(garbage)
    caplog.set_level(logging.WARNING)
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        aside = list(settings.home.glob("secrets.json.corrupt-*"))
        assert len(aside) == 1 and aside[0].read_text() == garbage
        assert stat.S_IMODE(aside[0].stat().st_mode) == 0o600
        assert aside[0].name in caplog.text and "sk-precious" not in caplog.text
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(
            transport=transport,
            base_url="http://famulus.test",
            headers={"Authorization": f"Bearer {API_KEY}"},
        ) as client:
            r = await client.post("/providers/openai/connect", json={"api_key": OPENAI_KEY})
            assert r.status_code == 200, r.text
    assert json.loads(settings.secrets_file.read_text()) == {"provider:openai": OPENAI_KEY}
    assert aside[0].read_text() == garbage  # the next secret did not overwrite it


@pytest.mark.parametrize("status", [500, 429])
@pytest.mark.parametrize(
    ("provider", "key", "path"),
    [
        ("openai", OPENAI_KEY, "/openai/v1/chat/completions"),
        ("openrouter", "sk-or-good-0000000000", "/openrouter/v1/chat/completions"),
        ("anthropic", ANTHROPIC_KEY, "/anthropic/v1/messages"),
        ("google", GOOGLE_KEY, "/google/v1beta/models/gemini-2.5-pro"),
    ],
)
async def test_a_failing_provider_gets_exactly_three_tries_per_call(
    client: httpx.AsyncClient,
    app: Any,
    fake: tuple[str, FakeState],
    allow_model_requests: None,
    monkeypatch: pytest.MonkeyPatch,
    provider: str,
    key: str,
    path: str,
    status: int,
) -> None:
    """One retry layer (ours), not ours × the SDK's: the contract's 3 tries in total."""
    from tests.support.chat_models import events_until

    from famulus.agent import retry

    monkeypatch.setattr(retry, "BASE_DELAY_S", 0.01)
    _, state = fake
    r = await client.post(f"/providers/{provider}/connect", json={"api_key": key})
    assert r.status_code == 200, r.text
    state.fail_status = status
    sid = (await client.post("/sessions", json={})).json()["session_id"]
    r = await client.post("/chat/message", json={"message": "hi", "session_id": sid})
    assert r.status_code == 202, r.text
    events = await events_until(app, sid, ("run_error", "run_finished"), timeout=30)
    assert events[-1]["type"] == "run_error", events[-1]
    assert len(state.find(path)) == 3, [r.path for r in state.requests]


async def test_openrouter_checks_the_key_where_a_key_is_needed(
    client: httpx.AsyncClient, fake: tuple[str, FakeState], settings: Settings
) -> None:
    """OpenRouter's model list answers any key, so it cannot tell a wrong key from a right one."""
    _, state = fake
    r = await client.post("/providers/openrouter/connect", json={"api_key": "sk-or-v1-wrong-0000"})
    assert r.status_code == 502, r.text
    assert "OpenRouter" in r.json()["detail"] and "User not found." in r.json()["detail"]
    assert (await _providers(client))["openrouter"]["connected"] is False
    assert not settings.secrets_file.exists() or "wrong" not in settings.secrets_file.read_text()

    good = "sk-or-v1-good-0123456789"
    r = await client.post(
        "/providers/openrouter/connect",
        json={"api_key": good, "chat_model": "or-remote-only/model"},
    )
    assert r.status_code == 200, r.text
    assert state.find("/openrouter/v1/key")[-1].headers["authorization"] == f"Bearer {good}"
    # The model list is still read: a model only the provider lists is accepted.
    assert (await client.get("/config")).json()["chat_model"] == "or-remote-only/model"


@pytest.fixture
def openrouter_env(clean_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Set before the app starts (request it before ``client``)."""
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-v1-good-env-123456")


async def test_a_provider_connected_from_the_environment_gets_a_chat_model(
    openrouter_env: None, client: httpx.AsyncClient, app: Any
) -> None:
    assert (await client.get("/config")).json()["chat_model"] == "anthropic/claude-sonnet-4.5"
    resolved = await app.state.container.llm.resolve("chat")
    assert resolved.provider == "openrouter"


async def test_the_environment_never_replaces_a_chosen_chat_model(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, clean_env: None
) -> None:
    from tests.conftest import API_KEY

    from famulus.app import create_app

    async def run(check: Any) -> None:
        application = create_app(settings)
        async with application.router.lifespan_context(application):
            transport = httpx.ASGITransport(app=application)
            async with httpx.AsyncClient(
                transport=transport,
                base_url="http://famulus.test",
                headers={"Authorization": f"Bearer {API_KEY}"},
            ) as client:
                await check(client)

    async def choose(client: httpx.AsyncClient) -> None:
        r = await client.post("/providers/openai/connect", json={"api_key": OPENAI_KEY})
        assert r.status_code == 200
        assert (
            await client.patch("/config", json={"chat_model": "gpt-4.1-mini"})
        ).status_code == 200

    async def unchanged(client: httpx.AsyncClient) -> None:
        assert (await client.get("/config")).json()["chat_model"] == "gpt-4.1-mini"

    await run(choose)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-good-env-abcdef")
    await run(unchanged)


async def test_503_names_the_provider_to_connect(
    client: httpx.AsyncClient, app: Any, settings: Settings
) -> None:
    from famulus.errors import NotConfigured

    llm = app.state.container.llm
    with pytest.raises(NotConfigured) as info:
        await llm.resolve("chat")
    assert "{id}" not in info.value.detail
    assert "POST /providers/anthropic/connect" in info.value.detail

    # A chat model whose provider was disconnected: the message names that provider.
    await client.post("/providers/openai/connect", json={"api_key": OPENAI_KEY})
    await client.delete("/providers/openai")
    r = await client.post("/sessions", json={})
    sid = r.json()["session_id"]
    r = await client.post("/chat/message", json={"message": "hi", "session_id": sid})
    assert r.status_code == 503, r.text
    detail = r.json()["detail"]
    assert "{id}" not in detail
    assert "'gpt-4.1'" in detail and "POST /providers/openai/connect" in detail
    assert "/providers/anthropic/connect" not in detail  # only the provider that offers it
