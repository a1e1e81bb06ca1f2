# ruff: noqa: F811  (pytest fixtures imported from tests.support.llm_fixtures)
"""POST/DELETE /models/custom: validation, conflicts, and "usable at once"."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from pydantic_ai import Agent
from tests.support.llm_fakes import FakeState
from tests.support.llm_fixtures import clean_env, fake, llm_settings  # noqa: F401

from famulus.settings import Settings


@pytest.fixture
def settings(llm_settings: Settings) -> Settings:
    return llm_settings


def _model(base: str, **over: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model_id": "llama3.1:8b",
        "base_url": f"{base}/custom/v1",
        "context_window": 8192,
        "max_output_tokens": 2048,
    }
    body.update(over)
    return body


async def test_add_list_and_remove(client: httpx.AsyncClient, fake: tuple[str, FakeState]) -> None:
    base, _ = fake
    r = await client.post("/models/custom", json=_model(base))
    assert r.status_code == 201
    assert r.json() == {"status": "added", "model_id": "llama3.1:8b"}
    providers = {p["id"]: p for p in (await client.get("/providers")).json()["providers"]}
    assert providers["custom"]["connected"] is True
    assert providers["custom"]["models"] == ["llama3.1:8b"]
    groups = (await client.get("/models")).json()["groups"]
    assert groups == [
        {
            "provider": "custom",
            "models": [
                {
                    "id": "llama3.1:8b",
                    "context_window": 8192,
                    "max_output_tokens": 2048,
                    "vision": False,
                    "input_price_per_mtok": None,
                    "output_price_per_mtok": None,
                }
            ],
        }
    ]
    r = await client.delete("/models/custom/llama3.1:8b")
    assert r.status_code == 200
    assert r.json() == {"status": "removed", "model_id": "llama3.1:8b"}
    providers = {p["id"]: p for p in (await client.get("/providers")).json()["providers"]}
    assert providers["custom"]["connected"] is False


async def test_duplicate_is_409_and_unknown_delete_is_404(
    client: httpx.AsyncClient, fake: tuple[str, FakeState]
) -> None:
    base, _ = fake
    assert (await client.post("/models/custom", json=_model(base))).status_code == 201
    r = await client.post(
        "/models/custom", json=_model(base, context_window=4096, max_output_tokens=10)
    )
    assert r.status_code == 409 and r.json()["code"] == "conflict"
    r = await client.delete("/models/custom/nope")
    assert r.status_code == 404 and r.json()["code"] == "not_found"


@pytest.mark.parametrize(
    "over",
    [
        {"model_id": ""},
        {"model_id": "has space"},
        {"model_id": "x" * 201},
        {"base_url": "not a url"},
        {"base_url": "ftp://127.0.0.1/v1"},
        {"base_url": "http://"},
        {"base_url": "http://user:pw@127.0.0.1/v1"},
        {"context_window": 0},
        {"max_output_tokens": -1},
        {"context_window": 1000, "max_output_tokens": 1000},
        {"context_window": "8192"},
        {"context_window": 8192.5},
        {"api_key": 12},
        {"vision": "yes"},
        {"unexpected": True},
    ],
)
async def test_validation(
    client: httpx.AsyncClient, fake: tuple[str, FakeState], over: dict[str, Any]
) -> None:
    base, _ = fake
    r = await client.post("/models/custom", json=_model(base, **over))
    assert r.status_code == 422, r.text
    assert r.json()["code"] == "invalid_request"
    assert (await client.get("/models")).json()["groups"] == []


async def test_missing_fields_are_422(client: httpx.AsyncClient) -> None:
    r = await client.post("/models/custom", json={"model_id": "m"})
    assert r.status_code == 422


async def test_usable_at_once_against_a_local_server(
    client: httpx.AsyncClient,
    app: Any,
    fake: tuple[str, FakeState],
    settings: Settings,
    allow_model_requests: None,
) -> None:
    base, state = fake
    r = await client.post("/models/custom", json=_model(base, api_key="local-secret-key-1234"))
    assert r.status_code == 201
    assert (await client.get("/config")).json()["chat_model"] == "llama3.1:8b"

    llm = app.state.container.llm
    resolved = await llm.resolve("chat")
    assert (resolved.provider, resolved.model_id) == ("custom", "llama3.1:8b")
    assert (resolved.context_window, resolved.max_output_tokens) == (8192, 2048)
    # research and memory fall back to the chat model when unset
    assert (await llm.resolve("research")).model_id == "llama3.1:8b"

    result = await Agent(resolved.model).run("hi")
    assert result.output == "Hello from the fake model."
    sent = state.find("/custom/v1/chat/completions")[-1]
    assert sent.headers["authorization"] == "Bearer local-secret-key-1234"
    assert json.loads(sent.body)["model"] == "llama3.1:8b"
    # the key lives in the secrets file, not in the database
    assert "local-secret-key-1234" in settings.secrets_file.read_text()
    assert b"local-secret-key-1234" not in settings.db_path.read_bytes()


async def test_without_api_key_a_placeholder_is_sent(
    client: httpx.AsyncClient, app: Any, fake: tuple[str, FakeState], allow_model_requests: None
) -> None:
    base, state = fake
    await client.post("/models/custom", json=_model(base, model_id="qwen/qwen3"))
    resolved = await app.state.container.llm.resolve("chat")
    await Agent(resolved.model).run("hi")
    assert state.find("/chat/completions")[-1].headers["authorization"].startswith("Bearer ")
    # ids with a slash work in the DELETE path too
    assert (await client.delete("/models/custom/qwen/qwen3")).status_code == 200


async def test_removing_a_role_model_clears_the_role(
    client: httpx.AsyncClient, fake: tuple[str, FakeState]
) -> None:
    base, _ = fake
    await client.post("/models/custom", json=_model(base, model_id="a"))
    await client.post("/models/custom", json=_model(base, model_id="b"))
    r = await client.patch("/config", json={"research_model": "custom:b", "memory_model": "a"})
    assert r.status_code == 200
    await client.delete("/models/custom/b")
    cfg = (await client.get("/config")).json()
    assert (cfg["chat_model"], cfg["research_model"], cfg["memory_model"]) == ("a", None, "a")
    await client.delete("/models/custom/a")
    cfg = (await client.get("/config")).json()
    assert (cfg["chat_model"], cfg["memory_model"]) == (None, None)


async def test_an_override_answers_only_within_its_with(app: Any) -> None:
    from pydantic_ai.models.test import TestModel
    from tests.support.chat_models import resolved

    from famulus.errors import NotConfigured

    llm = app.state.container.llm
    outer = resolved(TestModel(), model_id="outer")
    with llm.override("chat", outer):
        # The same model, handed out with the usage meter attached (see LLMService.resolve).
        chosen = await llm.resolve("chat")
        assert chosen.model is outer.model and chosen.meter is app.state.container.usage
        assert (await llm.resolve("memory")).model is outer.model  # falls back to chat
        with llm.override("chat", resolved(TestModel(), model_id="inner")):
            assert (await llm.resolve("chat")).model_id == "inner"
        assert (await llm.resolve("chat")).model is outer.model
    with pytest.raises(NotConfigured):
        await llm.resolve("chat")
    with pytest.raises(ValueError, match="unknown role"), llm.override("drafting", outer):
        pass


async def test_no_model_is_503_with_guidance(client: httpx.AsyncClient, app: Any) -> None:
    from famulus.errors import NotConfigured

    with pytest.raises(NotConfigured) as info:
        await app.state.container.llm.resolve("chat")
    assert "POST /providers/anthropic/connect" in info.value.detail
    assert "{id}" not in info.value.detail
    assert "POST /models/custom" in info.value.detail
    assert info.value.status == 503
