"""Fuzz every operation of our own OpenAPI document: no input may cause a 5xx.

The server runs for real on loopback (uvicorn in a thread); the schema comes
from the same app. Streaming endpoints are excluded (they never finish), and
so is permanent data wiping that would only slow the run.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from tests.conftest import API_KEY
from tests.support.live import serve_in_thread

from famulus.app import create_app
from famulus.settings import Settings

_SKIP = ("/chat/events/", "/automations/events", "/memory/events")


def _app_settings(home: Path) -> Settings:
    return Settings(home=home, api_key=API_KEY, project_dir=home)  # type: ignore[arg-type]


_schema_app = create_app(_app_settings(Path(tempfile.mkdtemp()) / "schema"))
schema = schemathesis.openapi.from_dict(_schema_app.openapi())


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    app = create_app(_app_settings(tmp_path_factory.mktemp("fuzz")))
    with serve_in_thread(app) as base:
        yield base


@schema.parametrize()
@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_no_server_errors(case: schemathesis.Case, base_url: str) -> None:
    if any(case.path.startswith(prefix) for prefix in _SKIP):
        return
    response = case.call(
        base_url=base_url, headers={"Authorization": f"Bearer {API_KEY}"}, timeout=15
    )
    assert response.status_code < 500, (
        f"{case.method} {case.path} -> {response.status_code}: {response.text[:300]}"
    )
    if response.status_code >= 400:
        body = response.json()
        if case.path.startswith("/v1/"):  # OpenAI's error shape there
            assert {"message", "type", "param", "code"} <= set(body["error"]), body
        else:
            assert {"detail", "code"} <= set(body), body
    # Every status documented, every body and content type as the document says.
    case.validate_response(
        response,
        checks=[status_code_conformance, content_type_conformance, response_schema_conformance],
    )
