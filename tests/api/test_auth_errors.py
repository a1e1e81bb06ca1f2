"""Authentication, the key file, throttling and the error body on every error path."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import httpx
import pytest

from famulus.app import create_app
from famulus.auth import generate_key, write_key_file
from famulus.settings import Settings

PROTECTED = [
    ("GET", "/session"),
    ("GET", "/sessions"),
    ("POST", "/sessions"),
    ("GET", "/sessions/archived"),
    ("GET", "/session/history"),
    ("POST", "/session/clear"),
    ("GET", "/directives"),
    ("PUT", "/directives"),
    ("GET", "/chat/events/x"),
    ("GET", "/memory/events"),
    ("GET", "/openapi.json"),
]


@pytest.mark.parametrize(("method", "path"), PROTECTED)
async def test_every_endpoint_needs_the_key(
    anon: httpx.AsyncClient, method: str, path: str
) -> None:
    r = await anon.request(method, path)
    assert r.status_code == 401
    assert r.headers["www-authenticate"] == "Bearer"
    assert r.json()["code"] == "unauthorized"
    r = await anon.request(method, path, headers={"Authorization": "Bearer wrong"})
    assert r.status_code == 401


async def test_health_is_public_and_reports_auth(anon: httpx.AsyncClient) -> None:
    from tests.conftest import API_KEY

    assert (await anon.get("/health")).json() == {"status": "ok", "version": "0.1.0"}
    ok = await anon.get("/health", headers={"Authorization": f"Bearer {API_KEY}"})
    assert ok.json() == {"status": "ok", "version": "0.1.0", "auth": True}
    bad = await anon.get("/health", headers={"Authorization": "Bearer nope"})
    assert bad.status_code == 200 and bad.json()["auth"] is False


async def test_repeated_failures_are_throttled(anon: httpx.AsyncClient, settings: Settings) -> None:
    for _ in range(settings.auth_max_failures):
        assert (
            await anon.get("/sessions", headers={"Authorization": "Bearer x"})
        ).status_code == 401
    r = await anon.get("/sessions", headers={"Authorization": "Bearer x"})
    assert r.status_code == 429
    assert r.json()["code"] == "rate_limited"
    assert int(r.headers["retry-after"]) >= 1


def test_key_file_is_hashed_and_owner_only(tmp_path: Path) -> None:
    key = generate_key()
    path = tmp_path / "home" / "api_key.json"
    write_key_file(path, key)
    raw = path.read_text()
    assert key not in raw and key.removeprefix("fam_") not in raw
    record = json.loads(raw)
    assert set(record) >= {"salt", "hash"}
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


async def test_stored_key_works_and_reset_invalidates_at_once(tmp_path: Path) -> None:
    home = tmp_path / "h"
    settings = Settings(home=home, project_dir=tmp_path)
    old = generate_key()
    write_key_file(settings.key_file, old)
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            assert (
                await c.get("/sessions", headers={"Authorization": f"Bearer {old}"})
            ).status_code == 200
            new = generate_key()
            write_key_file(settings.key_file, new)
            os.utime(settings.key_file, ns=(1, 1))  # force a distinct mtime
            assert (
                await c.get("/sessions", headers={"Authorization": f"Bearer {old}"})
            ).status_code == 401
            assert (
                await c.get("/sessions", headers={"Authorization": f"Bearer {new}"})
            ).status_code == 200


async def test_malformed_json_is_400(client: httpx.AsyncClient) -> None:
    r = await client.post(
        "/sessions", content=b'{"name":', headers={"content-type": "application/json"}
    )
    assert r.status_code == 400
    assert r.json() == {"detail": "The request body is not valid JSON.", "code": "invalid_request"}


@pytest.mark.parametrize("body", [{"content": 5}, {}, {"content": "x", "extra": 1}, [], "text"])
async def test_bad_bodies_are_422_with_errors(client: httpx.AsyncClient, body: object) -> None:
    r = await client.put("/directives", json=body)
    assert r.status_code == 422
    data = r.json()
    assert data["code"] == "invalid_request" and data["detail"]
    assert all({"loc", "msg"} <= set(e) for e in data["errors"])


async def test_unknown_route_and_wrong_method(client: httpx.AsyncClient) -> None:
    r = await client.get("/no/such/route")
    assert r.status_code == 404 and r.json()["code"] == "not_found"
    r = await client.delete("/directives")
    assert r.status_code == 405 and r.json()["code"] == "method_not_allowed"
    assert r.headers["allow"] == "GET, PUT"
    # each method of a path is its own route: Allow still names them all
    r = await client.put("/sessions/abc")
    assert r.status_code == 405 and r.headers["allow"] == "DELETE, PATCH"


async def test_openapi_describes_the_real_error_body(client: httpx.AsyncClient) -> None:
    doc = (await client.get("/openapi.json")).json()
    assert "HTTPValidationError" not in doc["components"]["schemas"]
    error = doc["components"]["schemas"]["Error"]
    assert error["required"] == ["detail", "code"]
    assert error["properties"]["detail"]["type"] == "string"
    op = doc["paths"]["/sessions/{session_id}"]["patch"]["responses"]
    for status in ("400", "401", "404", "413", "415", "422", "429"):
        schema = op[status]["content"]["application/json"]["schema"]
        assert schema == {"$ref": "#/components/schemas/Error"}, status
    health = doc["paths"]["/health"]["get"]["responses"]
    assert "401" not in health and "422" not in health


async def test_oversized_bodies_are_413(client: httpx.AsyncClient) -> None:
    big = json.dumps({"content": "x" * (1024 * 1024 + 10)}).encode()
    r = await client.put("/directives", content=big, headers={"content-type": "application/json"})
    assert r.status_code == 413 and r.json()["code"] == "payload_too_large"

    async def chunks():
        for _ in range(20):
            yield b"x" * 100_000

    r = await client.put(
        "/directives", content=chunks(), headers={"content-type": "application/json"}
    )
    assert r.status_code == 413


async def test_directives_roundtrip_and_limit(client: httpx.AsyncClient) -> None:
    assert (await client.get("/directives")).json() == {"content": ""}
    r = await client.put("/directives", json={"content": "Answer in French."})
    assert r.json() == {"content": "Answer in French."}
    assert (await client.get("/directives")).json() == {"content": "Answer in French."}
    r = await client.put("/directives", json={"content": "x" * 20_001})
    assert r.status_code == 422


async def test_openapi_describes_endpoints(client: httpx.AsyncClient) -> None:
    doc = (await client.get("/openapi.json")).json()
    assert "/sessions/{session_id}/permanent" in doc["paths"]
    assert "/chat/events/{session_id}" in doc["paths"]


async def test_missing_key_is_not_a_guess(anon: httpx.AsyncClient, settings: Settings) -> None:
    """A client that forgot the header is told so, never locked out for it."""
    for _ in range(settings.auth_max_failures * 2):
        assert (await anon.get("/sessions")).status_code == 401


async def test_health_guesses_count_and_a_valid_key_clears(
    anon: httpx.AsyncClient, settings: Settings
) -> None:
    from tests.conftest import API_KEY

    good = {"Authorization": f"Bearer {API_KEY}"}
    for _ in range(settings.auth_max_failures - 1):
        await anon.get("/sessions", headers={"Authorization": "Bearer x"})
    assert (await anon.get("/sessions", headers=good)).status_code == 200  # clears the count
    for _ in range(settings.auth_max_failures):
        bad = await anon.get("/health", headers={"Authorization": "Bearer guess"})
        assert bad.status_code == 200 and bad.json()["auth"] is False
    # /health guesses count: the address is now throttled, even for the real key.
    assert (await anon.get("/health", headers=good)).json()["auth"] is False
    assert (await anon.get("/sessions", headers=good)).status_code == 429


@pytest.mark.parametrize(
    "path", ["/facts/9223372036854775808", "/automations/99999999999999999999", "/dreams/0"]
)
async def test_ids_out_of_range_are_422_not_500(client: httpx.AsyncClient, path: str) -> None:
    r = await client.get(path)
    assert r.status_code == 422 and r.json()["code"] == "invalid_request"


async def test_huge_id_inside_a_body_is_a_clean_error(client: httpx.AsyncClient) -> None:
    r = await client.post(
        "/memory/profile",
        json={"kind": "name", "summary": "x", "source_fact_ids": [2**70]},
    )
    assert r.status_code in (404, 422) and "detail" in r.json()


def test_slow_key_checks_do_not_hold_up_other_requests(tmp_path: Path) -> None:
    """scrypt runs off the event loop: while a burst of wrong keys sent to /health
    is being checked (each check held open here, as scrypt is on a busy machine),
    an unrelated request is answered. No clock is read: were a check on the loop,
    the others would never start and the request would never be answered."""
    import threading

    from tests.support.live import serve_in_thread

    settings = Settings(home=tmp_path / "home", auth_max_failures=1000)
    write_key_file(settings.key_file, generate_key())
    app = create_app(settings)
    verifier = app.state.container.verifier
    real_verify = verifier.verify
    entered = threading.Semaphore(0)
    release = threading.Event()

    def held_verify(token: str) -> bool:
        entered.release()
        release.wait(30)
        return bool(real_verify(token))

    verifier.verify = held_verify
    with serve_in_thread(app) as base:
        wrong = {"Authorization": "Bearer wrong"}
        attackers = [
            threading.Thread(
                target=httpx.get, args=(f"{base}/health",), kwargs={"headers": wrong, "timeout": 30}
            )
            for _ in range(4)
        ]
        for t in attackers:
            t.start()
        try:
            started = sum(entered.acquire(timeout=10) for _ in attackers)
            assert started == len(attackers), f"only {started} key checks ran at once"
            assert httpx.get(f"{base}/health", timeout=10).status_code == 200
        finally:
            release.set()
            for t in attackers:
                t.join()


DEEP = b"[" * 10_000 + b"]" * 10_000


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/session/clear"),
        ("POST", "/sessions"),
        ("PATCH", "/sessions/x"),
        ("POST", "/facts"),
    ],
)
async def test_a_too_deep_body_is_400_after_the_key_check(
    anon: httpx.AsyncClient, method: str, path: str
) -> None:
    from tests.conftest import API_KEY

    json_type = {"Content-Type": "application/json"}
    r = await anon.request(method, path, content=DEEP, headers=json_type)
    assert r.status_code == 401, r.text  # the caller is judged first
    bad = {**json_type, "Authorization": "Bearer wrong"}
    assert (await anon.request(method, path, content=DEEP, headers=bad)).status_code == 401
    ok = {**json_type, "Authorization": f"Bearer {API_KEY}"}
    r = await anon.request(method, path, content=DEEP, headers=ok)
    assert r.status_code == 400, r.text
    assert r.json()["code"] == "invalid_request" and "nested more than 100" in r.json()["detail"]


async def test_brackets_inside_strings_are_not_nesting(client: httpx.AsyncClient) -> None:
    r = await client.post("/facts", json={"text": "[" * 500 + " brackets are text " + "{" * 500})
    assert r.status_code == 201, r.text
