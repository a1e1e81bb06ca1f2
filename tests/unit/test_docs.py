"""A user-visible setting that is not documented is a bug."""

from __future__ import annotations

import re
from pathlib import Path

from famulus.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


def test_every_setting_is_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text()
    documented = set(re.findall(r"FAMULUS_[A-Z0-9_]+", readme))
    missing = sorted(
        f"FAMULUS_{name.upper()}"
        for name in Settings.model_fields
        if f"FAMULUS_{name.upper()}" not in documented
    )
    assert not missing, f"settings missing from README.md: {missing}"


def test_every_route_is_in_the_api_docs(tmp_path: Path) -> None:
    from famulus.app import create_app

    api_md = (ROOT / "docs" / "api.md").read_text()
    app = create_app(Settings(home=tmp_path, api_key="k" * 32))  # type: ignore[arg-type]
    paths = set(app.openapi()["paths"])
    assert len(paths) > 60  # the whole API, not an empty schema
    undocumented = sorted(p for p in paths if p.split("{")[0].rstrip("/") not in api_md)
    assert not undocumented, f"routes missing from docs/api.md: {undocumented}"
