"""Check-then-act races over real HTTP: a row deleted while another request
changes it is a 404 for the loser, never a 500."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.conftest import API_KEY
from tests.support.live import serve_in_thread
from tests.support.sessions import new_session
from tests.support.triggers import never_soon

from famulus.app import create_app
from famulus.settings import Settings

ROUNDS = 15


@pytest.fixture
def base(tmp_path: Path) -> Iterator[str]:
    settings = Settings(home=tmp_path / "home", api_key=API_KEY, project_dir=tmp_path)  # type: ignore[arg-type]
    with serve_in_thread(create_app(settings)) as url:
        yield url


Make = Callable[[httpx.AsyncClient], Awaitable[str]]


async def _fact(http: httpx.AsyncClient) -> str:
    r = await http.post("/facts", json={"text": "The spare key is under the blue pot"})
    return f"/facts/{r.json()['fact']['id']}"


async def _session(http: httpx.AsyncClient) -> str:
    return f"/sessions/{await new_session(http)}"


async def _automation(http: httpx.AsyncClient) -> str:
    body = {"name": "Race", "description": "d", "trigger": never_soon()}
    return f"/automations/{(await http.post('/automations', json=body)).json()['id']}"


async def _profile(http: httpx.AsyncClient) -> str:
    r = await http.post("/memory/profile", json={"kind": "name", "summary": "Goes by Sam"})
    return f"/memory/profile/{r.json()['entry']['id']}"


CASES: list[tuple[str, Make, dict[str, Any], str]] = [
    ("fact", _fact, {"text": "The spare key is in the drawer"}, ""),
    ("session", _session, {"name": "renamed"}, "/permanent"),
    ("automation", _automation, {"name": "Renamed"}, ""),
    ("profile", _profile, {"summary": "Goes by Samuel"}, ""),
]


@pytest.mark.parametrize(
    ("kind", "make", "patch", "delete_suffix"), CASES, ids=[c[0] for c in CASES]
)
def test_patch_and_delete_at_once_never_500(
    base: str, kind: str, make: Make, patch: dict[str, Any], delete_suffix: str
) -> None:
    async def main() -> list[int]:
        statuses: list[int] = []
        async with httpx.AsyncClient(
            base_url=base, headers={"Authorization": f"Bearer {API_KEY}"}, timeout=20
        ) as http:
            for _ in range(ROUNDS):
                path = await make(http)
                answers = await asyncio.gather(
                    http.patch(path, json=patch),
                    http.delete(path + delete_suffix),
                    http.patch(path, json=patch),
                    http.delete(path + delete_suffix),
                )
                statuses += [r.status_code for r in answers]
                for r in answers:
                    assert r.status_code in (200, 404), (kind, r.status_code, r.text)
                    if r.status_code == 404:
                        assert r.json()["code"] == "not_found"
        return statuses

    statuses = asyncio.run(main())
    assert 200 in statuses


async def _vanished(*args: Any, **kwargs: Any) -> None:
    return None  # the row was deleted between the service's check and its write


@pytest.mark.parametrize(
    ("kind", "store", "method"),
    [
        ("fact", lambda c: c.memory.service.stores.facts, "update"),
        ("session", lambda c: c.sessions.store, "update"),
        ("automation", lambda c: c.automations.store, "update"),
        ("profile", lambda c: c.memory.service.stores.profile, "update"),
    ],
)
async def test_a_row_gone_between_check_and_write_is_404(
    app: Any,
    client: httpx.AsyncClient,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    store: Callable[[Any], Any],
    method: str,
) -> None:
    make, patch = {c[0]: (c[1], c[2]) for c in CASES}[kind]
    path = await make(client)
    monkeypatch.setattr(store(app.state.container), method, _vanished)
    r = await client.patch(path, json=patch)
    assert r.status_code == 404, r.text
    assert r.json()["code"] == "not_found"
