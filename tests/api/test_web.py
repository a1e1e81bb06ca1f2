"""Web search through the API: GET /config status per mode and the agent's web tools.

Exa and the keyless engines (DuckDuckGo, Mojeek; reached by ddgs through a
proxy) are a loopback fake (tests/support/fake_web.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from tests.conftest import API_KEY
from tests.support.chat_models import events_until, install_model, scripted
from tests.support.fake_web import EXA_KEY, WebState, web_server
from tests.support.sessions import new_session

from famulus.settings import Settings


@pytest.fixture
def web() -> Iterator[WebState]:
    with web_server() as state:
        yield state


@pytest.fixture
def settings(
    home: Path, tmp_path: Path, web: WebState, monkeypatch: pytest.MonkeyPatch
) -> Settings:
    monkeypatch.delenv("EXA_API_KEY", raising=False)  # the developer's own key must not leak in
    return Settings(
        home=home,
        api_key=API_KEY,  # type: ignore[arg-type]
        project_dir=tmp_path / "project",
        exa_base_url=f"{web.url}/exa",
        # ddgs reaches the engines' real addresses; here only through the fake's proxy.
        web_search_proxy=web.url,
        web_search_ca_file=web.ca_file,
    )


@pytest.fixture
async def with_exa(client: httpx.AsyncClient) -> AsyncIterator[None]:
    r = await client.post("/services/web-search/connect", json={"api_key": EXA_KEY})
    assert r.status_code == 200, r.text
    yield


async def _web_status(client: httpx.AsyncClient, mode: str | None = None) -> dict[str, Any]:
    if mode is not None:
        r = await client.patch("/config", json={"web_search": mode})
        assert r.status_code == 200, r.text
    web: dict[str, Any] = (await client.get("/config")).json()["integrations"]["web"]
    return web


async def _run(app: Any, client: httpx.AsyncClient, message: str) -> list[dict[str, Any]]:
    sid = await new_session(client)
    r = await client.post("/chat/message", json={"message": message, "session_id": sid})
    assert r.status_code == 202, r.text
    return await events_until(app, sid, ("run_finished", "run_error"))


def _offered_tools(app: Any) -> tuple[FunctionModel, list[set[str]]]:
    seen: list[set[str]] = []

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append({t.name for t in info.function_tools})
        return ModelResponse(parts=[TextPart("ok")])

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
        seen.append({t.name for t in info.function_tools})
        yield "ok"

    model = FunctionModel(answer, stream_function=stream)
    install_model(app, model)
    return model, seen


# -- GET /config -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "provider"), [("auto", "ddgs"), ("exa", "none"), ("ddgs", "ddgs"), ("none", "none")]
)
async def test_config_web_status_without_exa_key(
    client: httpx.AsyncClient, mode: str, provider: str
) -> None:
    assert await _web_status(client, mode) == {
        "connected": provider != "none",
        "mode": mode,
        "provider": provider,
    }


@pytest.mark.parametrize(
    ("mode", "provider"), [("auto", "exa"), ("exa", "exa"), ("ddgs", "ddgs"), ("none", "none")]
)
async def test_config_web_status_with_exa_key(
    client: httpx.AsyncClient, with_exa: None, mode: str, provider: str
) -> None:
    assert await _web_status(client, mode) == {
        "connected": provider != "none",
        "mode": mode,
        "provider": provider,
    }


async def test_default_mode_is_auto_with_the_keyless_backend(client: httpx.AsyncClient) -> None:
    assert await _web_status(client) == {"connected": True, "mode": "auto", "provider": "ddgs"}


async def test_disconnecting_exa_falls_back_to_duckduckgo(
    client: httpx.AsyncClient, with_exa: None
) -> None:
    assert (await _web_status(client))["provider"] == "exa"
    assert (await client.delete("/services/web-search")).status_code == 200
    assert (await _web_status(client))["provider"] == "ddgs"


# -- the agent's tools ---------------------------------------------------------------


async def test_chat_web_search_via_duckduckgo(
    app: Any, client: httpx.AsyncClient, web: WebState
) -> None:
    install_model(app, scripted(("tool", "web_search", '{"query":"python language"}'), "Found."))
    events = await _run(app, client, "search python")
    assert events[-1]["type"] == "run_finished", events[-1]
    call = next(e for e in events if e["type"] == "tool_call")
    assert call["name"] == "web_search" and call["args"] == {"query": "python language"}
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["error"] is False and result["tool_id"] == call["tool_id"]
    text = result["result"]
    assert "(via ddgs: DuckDuckGo, Mojeek, Brave, Yahoo):" in text
    assert "1. About Python\n   https://python.org/about/?a=1&b=2\n" in text
    assert "Python is a programming language & more." in text
    # the redirect link is unwrapped to its target, query string and all
    assert "2. Direct link\n   https://docs.example.org/direct?x=1&y=2\n" in text
    # DuckDuckGo's two hits fall short of five: Mojeek's (asked alongside) follows
    assert "3. Mojeek find\n   https://mojeek.example/found" in text
    assert "Buy things" not in text and "y.js" not in text  # the ad is skipped
    ddg = [r for r in web.requests if r.get("host") == "html.duckduckgo.com"]
    assert [r["form"]["q"] for r in ddg] == ["python language"]


async def test_duckduckgo_bot_check_falls_back_to_another_engine(
    app: Any, client: httpx.AsyncClient, web: WebState
) -> None:
    web.ddg_status = 202  # DuckDuckGo's answer to traffic it takes for a bot
    install_model(app, scripted(("tool", "web_search", '{"query":"python"}'), "Found."))
    events = await _run(app, client, "search python")
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["error"] is False
    assert "1. Mojeek find\n   https://mojeek.example/found" in result["result"]
    assert "About Python" not in result["result"]
    assert any(r.get("host") == "html.duckduckgo.com" for r in web.requests)


async def test_chat_web_search_via_exa(
    app: Any, client: httpx.AsyncClient, web: WebState, with_exa: None
) -> None:
    install_model(
        app, scripted(("tool", "web_search", '{"query":"news","num_results":2}'), "Found.")
    )
    events = await _run(app, client, "search news")
    result = next(e for e in events if e["type"] == "tool_result")
    text = result["result"]
    assert "via Exa" in text
    assert "1. Exa result one\n   https://exa.example/one\n   2024-05-01: First result" in text
    assert "2. Exa result two\n   https://exa.example/two\n   Second result text." in text
    search = [r for r in web.requests if r["path"] == "/exa/search"][-1]
    assert search["headers"]["x-api-key"] == EXA_KEY
    assert search["json"]["query"] == "news" and search["json"]["numResults"] == 2
    assert search["json"]["contents"]["text"]["maxCharacters"] > 0
    assert not any(r["method"] == "CONNECT" for r in web.requests)  # no keyless search


@pytest.mark.parametrize("mode", ["auto", "ddgs"])
async def test_upstream_500_is_a_readable_tool_result(
    app: Any, client: httpx.AsyncClient, web: WebState, mode: str
) -> None:
    await client.patch("/config", json={"web_search": mode})
    web.fail_status = 500
    install_model(app, scripted(("tool", "web_search", '{"query":"x"}'), "Sorry."))
    events = await _run(app, client, "search")
    assert events[-1]["type"] == "run_finished"
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["result"].startswith("Web search failed: no search engine")
    assert result["error"] is True  # a soft failure is still a failure to the client


async def test_exa_500_is_a_readable_tool_result(
    app: Any, client: httpx.AsyncClient, web: WebState, with_exa: None
) -> None:
    web.fail_status = 500
    install_model(app, scripted(("tool", "web_search", '{"query":"x"}'), "Sorry."))
    events = await _run(app, client, "search")
    assert events[-1]["type"] == "run_finished"
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["result"] == (
        "Web search failed: Exa answered HTTP 500 (exa is having a bad day)."
    )


async def test_chat_fetch_page(app: Any, client: httpx.AsyncClient, web: WebState) -> None:
    app.state.container.settings.fetch_allow_private = True  # the fake page is on loopback
    args = f'{{"url":"{web.url}/pages/moved"}}'
    install_model(app, scripted(("tool", "fetch_page", args), "Read it."))
    events = await _run(app, client, "read")
    result = next(e for e in events if e["type"] == "tool_result")
    text = result["result"]
    assert text.startswith(f"URL: {web.url}/pages/article\nTitle: An article\n")
    assert "First & foremost paragraph." in text and "- one\n- two" in text
    assert "secret" not in text and "color" not in text and "enable js" not in text
    assert result["error"] is False


async def test_fetch_page_refuses_local_addresses_by_default(
    app: Any, client: httpx.AsyncClient, web: WebState
) -> None:
    args = f'{{"url":"{web.url}/pages/article"}}'
    install_model(app, scripted(("tool", "fetch_page", args), "Hm."))
    events = await _run(app, client, "read")
    result = next(e for e in events if e["type"] == "tool_result")
    assert "local or private address" in result["result"]
    assert result["error"] is True
    assert not any(r["path"] == "/pages/article" for r in web.requests)


@pytest.mark.parametrize(
    ("mode", "exa", "expected"),
    [
        ("auto", False, {"web_search", "fetch_page"}),
        ("ddgs", False, {"web_search", "fetch_page"}),
        ("exa", True, {"web_search", "fetch_page"}),
        ("exa", False, {"fetch_page"}),
        ("none", False, set()),
        ("none", True, set()),
    ],
)
async def test_tools_offered_per_mode(
    app: Any, client: httpx.AsyncClient, mode: str, exa: bool, expected: set[str]
) -> None:
    if exa:
        await client.post("/services/web-search/connect", json={"api_key": EXA_KEY})
    await client.patch("/config", json={"web_search": mode})
    _, seen = _offered_tools(app)
    events = await _run(app, client, "hi")
    assert events[-1]["type"] == "run_finished"
    assert seen and "current_time" in seen[0]
    assert seen[0] & {"web_search", "fetch_page"} == expected


async def test_research_subagent_can_search(
    app: Any, client: httpx.AsyncClient, web: WebState
) -> None:
    install_model(app, scripted(("tool", "research", '{"question":"python?"}'), "Summary."))
    install_model(
        app, scripted(("tool", "web_search", '{"query":"python"}'), "Python."), role="research"
    )
    events = await _run(app, client, "research python")
    outer = next(e for e in events if e["type"] == "tool_call" and e["name"] == "research")
    inner = next(e for e in events if e["type"] == "tool_result" and e["name"] == "web_search")
    assert inner["depth"] == 1 and "About Python" in inner["result"]
    inner_call = next(e for e in events if e["type"] == "tool_call" and e["name"] == "web_search")
    assert inner_call["parent_id"] == outer["tool_id"]
