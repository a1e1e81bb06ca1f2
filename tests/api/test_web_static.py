"""The web client's files as HTTP serves them: public, with the security headers,
never outside the static folder, invisible to the OpenAPI document, and the
API's JSON errors everywhere else. Also the rules its code keeps (no inline
script or style, no innerHTML, under 300 KB) and the vendored files' checksums."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import httpx

from famulus.api.web import STATIC

ROOT = Path(__file__).resolve().parents[2]


async def test_index_and_files_are_public_with_security_headers(
    client: httpx.AsyncClient,
) -> None:
    for path, kind in (
        ("/", "text/html"),
        ("/app.css", "text/css"),
        ("/js/app.js", "text/javascript"),
        ("/js/views/chat.js", "text/javascript"),
        ("/vendor/purify.es.mjs", "text/javascript"),
        ("/favicon.ico", "image/svg+xml"),
    ):
        r = await client.get(path, headers={"Authorization": ""})
        assert r.status_code == 200, path
        assert r.headers["content-type"].startswith(kind), path
        csp = r.headers["content-security-policy"]
        assert "default-src 'self'" in csp and "script-src 'self';" in csp
        assert "unsafe-inline" not in csp and "frame-ancestors 'none'" in csp
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.headers["referrer-policy"] == "no-referrer"


async def test_other_paths_keep_the_json_errors(client: httpx.AsyncClient) -> None:
    for path in (
        "/no/such/route",
        "/js/nope.js",
        "/js/..%2F..%2F__init__.py",
        "/js/%2e%2e/%2e%2e/__init__.py",
        "/vendor/" + "..%2F" * 12 + "etc%2Fpasswd",
        "/vendor/" + "..%2F" * 12 + "etc%2Fos-release",
        "/vendor/",
        "/js/views",
    ):
        r = await client.get(path)
        assert r.status_code == 404, path
        assert r.json()["code"] == "not_found", path
    r = await client.post("/", json={})
    assert r.status_code == 405 and r.json()["code"] == "method_not_allowed"
    assert r.headers["allow"] == "GET"  # static routes are not in the OpenAPI document
    r = await client.head("/js/app.js")
    assert r.status_code == 405 and r.headers["allow"] == "GET"


async def test_static_routes_are_not_in_the_openapi_document(client: httpx.AsyncClient) -> None:
    paths = (await client.get("/openapi.json")).json()["paths"]
    assert "/" not in paths and not any(p.startswith(("/js", "/vendor", "/app.css")) for p in paths)


def _own_code() -> list[Path]:
    return [p for p in STATIC.rglob("*") if p.is_file() and "vendor" not in p.parts]


def test_own_code_is_small_and_never_inline() -> None:
    files = _own_code()
    assert any(p.name == "chat.js" for p in files)
    assert sum(p.stat().st_size for p in files) < 300 * 1024
    html = (STATIC / "index.html").read_text()
    assert re.findall(r"<script[^>]*>", html) == ['<script type="module" src="/js/app.js">']
    for path in files:
        text = path.read_text()
        assert "innerHTML" not in text and "outerHTML" not in text, path
        assert "insertAdjacentHTML" not in text and "eval(" not in text, path
        assert not re.search(r"style=[\"']", text), path


def test_vendored_files_match_their_recorded_checksums() -> None:
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "vendor_web.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert (STATIC / "vendor" / "marked.LICENSE").is_file()
    assert (STATIC / "vendor" / "dompurify.LICENSE").is_file()
