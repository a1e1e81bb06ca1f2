"""``/mcp`` speaks MCP behind famulus's own HTTP rules: the key check and its
throttle, the JSON depth limit, the error body, and nothing outside ``/mcp``."""

from __future__ import annotations

from typing import Any

import httpx

from famulus.settings import Settings

PING = {"jsonrpc": "2.0", "id": 7, "method": "ping"}
ACCEPT = {"Accept": "application/json, text/event-stream"}


async def test_a_valid_key_reaches_the_transport(client: httpx.AsyncClient) -> None:
    r = await client.post("/mcp", json=PING, headers=ACCEPT)
    assert r.status_code == 200 and r.json() == {"jsonrpc": "2.0", "id": 7, "result": {}}
    assert "mcp-session-id" not in r.headers  # stateless: nothing to resume or lose


async def test_tools_are_listed(client: httpx.AsyncClient) -> None:
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    r = await client.post("/mcp", json=listing, headers=ACCEPT)
    names = {t["name"] for t in r.json()["result"]["tools"]}
    assert {"recall", "remember", "chat", "list_automations", "run_automation"} <= names


async def test_missing_and_wrong_keys_are_famulus_401s(anon: httpx.AsyncClient) -> None:
    missing = await anon.post("/mcp", json=PING, headers=ACCEPT)
    wrong = await anon.post("/mcp", json=PING, headers={**ACCEPT, "Authorization": "Bearer no"})
    for r in (missing, wrong):
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
        assert r.json()["code"] == "unauthorized" and set(r.json()) == {"detail", "code"}


async def test_wrong_keys_are_throttled_like_everywhere(
    anon: httpx.AsyncClient, settings: Settings
) -> None:
    bad = {**ACCEPT, "Authorization": "Bearer wrong"}
    for _ in range(settings.auth_max_failures):
        assert (await anon.post("/mcp", json=PING, headers=bad)).status_code == 401
    r = await anon.post("/mcp", json=PING, headers=bad)
    assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
    # The same throttle as the routes: they refuse this address now too.
    assert (await anon.get("/sessions", headers=bad)).status_code == 429


async def test_only_post(anon: httpx.AsyncClient) -> None:
    for method in ("GET", "DELETE", "PUT"):
        r = await anon.request(method, "/mcp")
        assert r.status_code == 405 and r.headers["allow"] == "POST"
        assert r.json() == {
            "detail": f"Method {method} is not allowed on /mcp.",
            "code": "method_not_allowed",
        }


async def test_a_too_deep_body_is_400_after_the_key(
    client: httpx.AsyncClient, anon: httpx.AsyncClient
) -> None:
    deep: Any = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {}}
    inner = deep["params"]
    for _ in range(120):
        inner["x"] = {}
        inner = inner["x"]
    assert (await anon.post("/mcp", json=deep)).status_code == 401
    r = await client.post("/mcp", json=deep, headers=ACCEPT)
    assert r.status_code == 400 and r.json()["code"] == "invalid_request"


async def test_the_rest_of_mcp_is_the_route_table(client: httpx.AsyncClient) -> None:
    r = await client.post("/mcp/elsewhere", json=PING)
    assert r.status_code == 404
    assert r.json() == {"detail": "No route for POST /mcp/elsewhere.", "code": "not_found"}


async def test_not_in_the_openapi_document(client: httpx.AsyncClient) -> None:
    paths = (await client.get("/openapi.json")).json()["paths"]
    assert not [p for p in paths if p == "/mcp"]
