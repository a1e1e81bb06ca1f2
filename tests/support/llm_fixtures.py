"""Fixtures for the llm area's tests: a fake provider server and Settings aimed at it.

Import them into a test module (``from tests.support.llm_fixtures import *``
is avoided; name them explicitly) so ``settings`` there overrides the shared
one and every base URL points at the loopback fake.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import API_KEY
from tests.support.llm_fakes import FakeState, fake_server, settings_overrides

from famulus.llm.catalog import PROVIDERS
from famulus.llm.external import SERVICES
from famulus.settings import Settings

ENV_VARS = sorted(
    {v for p in PROVIDERS for v in p.env_vars} | {v for s in SERVICES for v in s.env_vars}
)


@pytest.fixture
def fake() -> Iterator[tuple[str, FakeState]]:
    with fake_server() as pair:
        yield pair


@pytest.fixture(autouse=False)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keys in the developer's own environment must not leak into the tests."""
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def llm_settings(
    home: Path, tmp_path: Path, fake: tuple[str, FakeState], clean_env: None
) -> Settings:
    base, _ = fake
    return Settings(
        home=home,
        api_key=API_KEY,  # type: ignore[arg-type]
        project_dir=tmp_path / "project",
        **settings_overrides(base),
    )
