# ruff: noqa: F811  (pytest fixtures imported from tests.support.llm_fixtures)
"""GET/PATCH /config and GET /models."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from tests.support.llm_fakes import FakeState
from tests.support.llm_fixtures import clean_env, fake, llm_settings  # noqa: F401

from famulus import config_keys
from famulus.settings import Settings

OPENAI_KEY = "sk-good-openai-0123456789-7f3a"


@pytest.fixture
def settings(llm_settings: Settings) -> Settings:
    return llm_settings


async def _custom(client: httpx.AsyncClient, base: str, model_id: str = "local-m") -> None:
    body = {
        "model_id": model_id,
        "base_url": f"{base}/custom/v1",
        "context_window": 32000,
        "max_output_tokens": 4000,
        "vision": True,
    }
    assert (await client.post("/models/custom", json=body)).status_code == 201


async def test_default_config_shape(client: httpx.AsyncClient) -> None:
    r = await client.get("/config")
    assert r.status_code == 200
    cfg = r.json()
    # embedding_model and memory.connected come from the memory area when installed
    assert isinstance(cfg.pop("embedding_model"), str | None)
    assert isinstance(cfg["integrations"]["memory"].pop("connected"), bool)
    assert cfg == {
        "chat_model": None,
        "research_model": None,
        "memory_model": None,
        "default_notifier": None,
        "budget_daily": None,
        "budget_monthly": None,
        "integrations": {
            "account": {"enabled": False, "connected": False},
            "memory": {"enabled": True, "dreams": False},
            # auto without an Exa key: the keyless DuckDuckGo backend
            "web": {"connected": True, "mode": "auto", "provider": "ddgs"},
        },
    }


async def test_patch_models_and_switches(
    client: httpx.AsyncClient, fake: tuple[str, FakeState], app: Any
) -> None:
    base, _ = fake
    await client.post("/providers/openai/connect", json={"api_key": OPENAI_KEY})
    await _custom(client, base)
    r = await client.patch(
        "/config",
        json={
            "chat_model": "openai:gpt-4.1-mini",
            "research_model": "gpt-5",
            "memory_model": "local-m",
            "memory_enabled": False,
            "dreams_enabled": True,
            "account_enabled": True,
            "web_search": "none",
        },
    )
    assert r.status_code == 200, r.text
    cfg = r.json()
    assert cfg["chat_model"] == "openai:gpt-4.1-mini"  # exactly as set
    assert cfg["research_model"] == "gpt-5" and cfg["memory_model"] == "local-m"
    memory = cfg["integrations"]["memory"]
    assert (memory["enabled"], memory["dreams"]) == (False, True)
    assert cfg["integrations"]["account"] == {"enabled": True, "connected": False}
    assert cfg["integrations"]["web"]["mode"] == "none"
    assert (await client.get("/config")).json() == cfg
    kv = app.state.container.core.kv
    assert await kv.get(config_keys.MEMORY_ENABLED) is False
    assert await kv.get(config_keys.WEB_SEARCH_MODE) == "none"

    llm = app.state.container.llm
    chat = await llm.resolve("chat")
    assert (chat.provider, chat.model_id, chat.input_price_per_mtok) == (
        "openai",
        "gpt-4.1-mini",
        0.4,
    )
    memory = await llm.resolve("memory")
    assert (memory.provider, memory.vision, memory.context_window) == ("custom", True, 32000)
    assert (await llm.resolve("research")).model_id == "gpt-5"
    # null clears a role; research then falls back to chat
    r = await client.patch("/config", json={"research_model": None})
    assert r.json()["research_model"] is None
    assert (await llm.resolve("research")).model_id == "gpt-4.1-mini"


@pytest.mark.parametrize(
    "body",
    [
        {"chat_model": "gpt-4.1"},  # openai is not connected
        {"chat_model": "anthropic:claude-sonnet-4-5"},
        {"research_model": "no-such-model"},
        {"chat_model": 5},
        {"chat_model": ""},
        {"memory_enabled": "yes"},
        {"dreams_enabled": 1},
        {"web_search": "google"},
        {"web_search": True},
        {"embedding_model": "x"},  # POST /config/embedding, not PATCH
        {"unknown": 1},
    ],
)
async def test_patch_rejects(client: httpx.AsyncClient, body: dict[str, Any]) -> None:
    r = await client.patch("/config", json=body)
    assert r.status_code == 422, r.text
    assert r.json()["code"] == "invalid_request"


async def test_a_rejected_patch_changes_nothing(
    client: httpx.AsyncClient, fake: tuple[str, FakeState]
) -> None:
    base, _ = fake
    await _custom(client, base)
    before = (await client.get("/config")).json()
    r = await client.patch("/config", json={"memory_enabled": False, "chat_model": "nope"})
    assert r.status_code == 422
    assert (await client.get("/config")).json() == before


async def test_models_grouped_by_connected_provider(
    client: httpx.AsyncClient, fake: tuple[str, FakeState]
) -> None:
    base, _ = fake
    assert (await client.get("/models")).json() == {
        "groups": [],
        "chat_model": None,
        "research_model": None,
        "memory_model": None,
    }
    await client.post("/providers/openai/connect", json={"api_key": OPENAI_KEY})
    await _custom(client, base)
    body = (await client.get("/models")).json()
    assert [g["provider"] for g in body["groups"]] == ["custom", "openai"]
    openai = body["groups"][1]["models"]
    gpt41 = next(m for m in openai if m["id"] == "gpt-4.1")
    assert gpt41["context_window"] > 100_000 and gpt41["output_price_per_mtok"] == 8.0
    assert body["chat_model"] == "gpt-4.1"


async def test_web_integration_follows_the_search_service(client: httpx.AsyncClient) -> None:
    r = await client.post("/services/web-search/connect", json={"api_key": "exa-good-key-123456"})
    assert r.status_code == 200
    web = (await client.get("/config")).json()["integrations"]["web"]
    assert web == {"connected": True, "mode": "auto", "provider": "exa"}
    for mode, provider in (("exa", "exa"), ("ddgs", "ddgs"), ("none", "none"), ("auto", "exa")):
        cfg = (await client.patch("/config", json={"web_search": mode})).json()
        assert cfg["integrations"]["web"] == {
            "connected": provider != "none",
            "mode": mode,
            "provider": provider,
        }


async def test_memory_service_is_consulted_when_installed(
    client: httpx.AsyncClient, app: Any
) -> None:
    class FakeMemory:
        def current_embedding_model(self) -> str:
            return "text-embedding-3-small"

        def connected(self) -> bool:
            return True

    config = app.state.container.llm_config
    real = config.memory
    config.memory = FakeMemory()
    try:
        cfg = (await client.get("/config")).json()
    finally:
        config.memory = real
    assert cfg["embedding_model"] == "text-embedding-3-small"
    assert cfg["integrations"]["memory"]["connected"] is True
