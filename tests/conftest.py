"""Shared fixtures: a real app over a real SQLite file in a temp FAMULUS_HOME.

Two guards apply to every test: no socket may connect anywhere but loopback,
and pydantic-ai refuses real model requests unless a test opts in with the
``allow_model_requests`` fixture (for scripted local servers).
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pydantic_ai.models
import pytest

from famulus.app import create_app
from famulus.settings import Settings

API_KEY = "test-key-0123456789abcdef0123456789abcdef"

_real_connect = socket.socket.connect


def _guarded_connect(self: socket.socket, address: Any) -> Any:
    if self.family in (socket.AF_INET, socket.AF_INET6):
        host = address[0]
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            ip = None
        if (ip is None and host != "localhost") or (ip is not None and not ip.is_loopback):
            raise ConnectionRefusedError(f"tests may not connect to {host!r} (loopback only)")
    return _real_connect(self, address)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto`` (set in pyproject's addopts): a worker per core, between 2 and 4.
    Two even on one core, since end-to-end tests mostly wait on servers and
    browsers; at most four, because each worker runs its own servers and
    browsers at once and the 15-minute budget is set on 2 cores anyway."""
    return max(2, min(4, os.cpu_count() or 2))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test needs its own node id: xdist hands tests to workers by id, and
    of several tests sharing one it runs only the first.

    schemathesis (4.x under pytest 9.2) gives all operations of a
    ``schema.parametrize()`` test the same id (``test_no_server_errors``); each
    gets its operation back in brackets, as under earlier pytest. Any other
    duplicate stops the run rather than losing tests silently."""
    for item in items:
        label = getattr(item, "operation_label", None)
        if label and "[" not in item.nodeid:
            item._id = item.parent.id.child(item.originalname).with_params(label)  # type: ignore[attr-defined, union-attr]
    twice = sorted(nodeid for nodeid, n in Counter(i.nodeid for i in items).items() if n > 1)
    if twice:
        raise pytest.UsageError(f"tests that share a node id (only one would run): {twice[:5]}")


@pytest.fixture(autouse=True, scope="session")
def _loopback_only() -> Iterator[None]:
    socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
    pydantic_ai.models.ALLOW_MODEL_REQUESTS = False
    yield
    socket.socket.connect = _real_connect  # type: ignore[method-assign]


@pytest.fixture
def allow_model_requests() -> Iterator[None]:
    pydantic_ai.models.ALLOW_MODEL_REQUESTS = True
    yield
    pydantic_ai.models.ALLOW_MODEL_REQUESTS = False


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "famulus-home"


@pytest.fixture
def settings(home: Path, tmp_path: Path) -> Settings:
    return Settings(
        home=home,
        api_key=API_KEY,  # type: ignore[arg-type]
        project_dir=tmp_path / "project",
        sse_ping_interval_s=15.0,
        codex_callback_port=0,  # tests run in parallel: never the fixed sign-in port
    )


@pytest.fixture
async def app(settings: Settings) -> AsyncIterator[Any]:
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture
async def client(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(
        transport=transport,
        base_url="http://famulus.test",
        headers={"Authorization": f"Bearer {API_KEY}"},
    ) as c:
        yield c


@pytest.fixture
async def anon(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://famulus.test") as c:
        yield c
