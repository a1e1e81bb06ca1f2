"""The error contract at the edges an outside audit probed: service-level 422s
carry ``errors``, model failures inside a request are 502s, stream ids are
bounded, and endpoints without a body refuse one instead of ignoring it."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from pydantic_ai.models.function import FunctionModel
from tests.support.chat_models import install_model


async def test_service_422s_carry_errors(client: httpx.AsyncClient) -> None:
    r = await client.post(
        "/models/custom",
        json={
            "model_id": "m",
            "base_url": "ftp://example.invalid",
            "context_window": 8000,
            "max_output_tokens": 1000,
        },
    )
    assert r.status_code == 422
    body = r.json()
    assert body["code"] == "invalid_request"
    assert body["errors"] == [{"loc": ["body", "base_url"], "msg": body["detail"]}]
    r = await client.post(
        "/automations",
        json={"name": "a", "description": "d", "trigger": {"type": "time", "at": "25:00"}},
    )
    assert r.status_code == 422 and r.json()["errors"][0]["loc"][0] == "body"


async def test_model_failure_inside_a_request_is_502(app: Any, client: httpx.AsyncClient) -> None:
    def plain_text(messages: list[Any], info: Any) -> Any:
        from pydantic_ai.messages import ModelResponse, TextPart

        return ModelResponse(parts=[TextPart("I refuse to answer in JSON.")])

    install_model(app, FunctionModel(plain_text), role="memory")
    await client.put("/directives", json={"content": "x"})
    memory = app.state.container.memory
    await memory.record_learning_event("correction", "Call me Robert, not Bob.", run_id="r1")
    r = await client.post("/memory/learning/propose")
    assert r.status_code == 502, r.text
    assert r.json()["code"] == "upstream_error" and "Traceback" not in r.text


@pytest.mark.parametrize(
    ("params", "headers"),
    [({"after": str(2**70)}, {}), ({}, {"Last-Event-ID": str(2**70)})],
)
async def test_stream_ids_are_bounded(
    client: httpx.AsyncClient, params: dict[str, str], headers: dict[str, str]
) -> None:
    sid = (await client.post("/sessions", json={})).json()["session_id"]
    r = await client.get(f"/chat/events/{sid}", params=params, headers=headers)
    assert r.status_code == 422 and r.json()["code"] == "invalid_request"


async def test_bodyless_endpoints_refuse_a_body(client: httpx.AsyncClient) -> None:
    await client.post("/facts", json={"text": "The cat is called Miso"})
    stray = await client.post("/memory/clear", json={"x": 1})
    assert stray.status_code == 422 and stray.json()["errors"][0]["loc"] == ["body"]
    malformed = await client.post(
        "/memory/clear", content=b"{bad", headers={"Content-Type": "application/json"}
    )
    assert malformed.status_code == 400
    assert (await client.get("/stats")).json()["fact_count"] == 1  # nothing was cleared
    for ok_body in (None, b"", b"{}", b"null"):
        sid = (await client.post("/sessions", json={})).json()["session_id"]
        r = await client.request("DELETE", f"/sessions/{sid}", content=ok_body)
        assert r.status_code == 200, (ok_body, r.text)


async def test_a_body_is_still_judged_after_auth(anon: httpx.AsyncClient) -> None:
    r = await anon.post("/memory/clear", json={"x": 1})
    assert r.status_code == 401


async def test_non_json_content_type_is_415(client: httpx.AsyncClient) -> None:
    r = await client.post(
        "/sessions", content=b'{"name": "x"}', headers={"Content-Type": "text/plain"}
    )
    assert r.status_code == 415 and "application/json" in r.json()["detail"]


async def test_chat_field_lengths_are_bounded(client: httpx.AsyncClient) -> None:
    sid = (await client.post("/sessions", json={})).json()["session_id"]
    r = await client.post(
        "/chat/message", json={"message": "hi", "session_id": sid, "client_id": "c" * 201}
    )
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "client_id"]


async def test_missing_content_type_is_415_and_missing_body_is_422(
    client: httpx.AsyncClient,
) -> None:
    r = await client.post("/directives", content=b'{"content": "x"}')
    assert r.status_code in (405, 415)
    r = await client.put("/directives", content=b'{"content": "x"}')
    assert r.status_code == 415, r.text
    r = await client.put("/directives")
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body"]


async def test_bodyless_endpoint_with_a_non_json_body_is_415(client: httpx.AsyncClient) -> None:
    await client.post("/facts", json={"text": "The cat is called Miso"})
    for body in (b'{"x": 1}', b"hello"):
        r = await client.post("/memory/clear", content=body, headers={"Content-Type": "text/plain"})
        assert r.status_code == 415, body
    assert (await client.get("/stats")).json()["fact_count"] == 1


@pytest.mark.parametrize("name", ["   ", "\u00a0"])
async def test_blank_names_are_422(client: httpx.AsyncClient, name: str) -> None:
    r = await client.post("/sessions", json={"name": name})
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "name"]


async def test_service_422s_name_their_field(client: httpx.AsyncClient) -> None:
    r = await client.post(
        "/automations",
        json={"name": "a", "description": "d", "trigger": {"type": "time", "every": "30s"}},
    )
    assert r.json()["errors"][0]["loc"][:3] == ["body", "trigger", "every"]
    r = await client.post("/skills/install", json={"source": "bad"})
    assert r.json()["errors"][0]["loc"] == ["body", "source"]
    r = await client.post(
        "/memory/profile", json={"kind": "k", "summary": "s", "source_fact_ids": [99999]}
    )
    assert r.json()["errors"][0]["loc"] == ["body", "source_fact_ids"]
    r = await client.post(
        "/models/custom",
        json={
            "model_id": "m",
            "base_url": "http://127.0.0.1:9/v1",
            "context_window": 1000,
            "max_output_tokens": 2000,
        },
    )
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "max_output_tokens"]
