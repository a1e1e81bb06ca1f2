"""Skills: discovery order, install from the code host, refusals that leave nothing, removal."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.conftest import API_KEY
from tests.support.fake_codehost import fake_codehost

from famulus.app import create_app
from famulus.settings import Settings

GOOD = b"---\nname: weather\ndescription: Tells the weather.\n---\nLook up the weather.\n"


def manifest(name: str, description: str = "Does things.") -> bytes:
    return f"---\nname: {name}\ndescription: {description}\n---\nSteps.\n".encode()


REPOS: dict[str, dict[str, Any]] = {
    "acme/skills": {
        "weather/SKILL.md": GOOD,
        "weather/run.py": b"print('sunny')\n",
        "weather/docs/notes.txt": b"notes",
        "nomanifest/readme.txt": b"hi",
        "badname/SKILL.md": manifest("Bad_Name"),
        "nofront/SKILL.md": b"just text",
        "clash/SKILL.md": manifest("init"),
        "outlink/SKILL.md": manifest("outlink"),
        "outlink/evil": ("symlink", "../../secrets"),
        "inlink/SKILL.md": manifest("inlink"),
        "inlink/a.txt": b"a",
        "inlink/b": ("symlink", "a.txt"),
        "many/SKILL.md": manifest("many"),
        **{f"many/f{i}.txt": b"x" for i in range(200)},
        "huge/SKILL.md": manifest("huge"),
        "huge/blob.bin": b"x" * (5 * 1024 * 1024 + 1),
        "file.txt": b"x",
    }
}


@pytest.fixture
def host() -> Iterator[str]:
    with fake_codehost(REPOS) as url:
        yield url


@pytest.fixture
async def skills_client(
    tmp_path: Path, host: str
) -> AsyncIterator[tuple[httpx.AsyncClient, Settings]]:
    project = tmp_path / "project"
    (project / ".skills" / "proj").mkdir(parents=True)
    (project / ".skills" / "proj" / "SKILL.md").write_bytes(manifest("proj", "A project skill."))
    (project / ".skills" / "init").mkdir(parents=True)
    (project / ".skills" / "init" / "SKILL.md").write_bytes(manifest("init", "Shadowed."))
    settings = Settings(
        home=tmp_path / "home", api_key=API_KEY, project_dir=project, skills_host_url=host
    )  # type: ignore[arg-type]
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://t", headers={"Authorization": f"Bearer {API_KEY}"}
        ) as c:
            yield c, settings


def _global_entries(settings: Settings) -> list[str]:
    return (
        sorted(p.name for p in settings.skills_dir.iterdir())
        if settings.skills_dir.exists()
        else []
    )


async def test_list_shows_builtins_first_and_project(skills_client: Any) -> None:
    client, _ = skills_client
    skills = {s["name"]: s for s in (await client.get("/skills")).json()["skills"]}
    assert {"add-model", "add-tool", "init", "proj"} <= set(skills)
    assert skills["init"]["location"] == "builtin"  # builtin wins the clash
    assert skills["proj"]["location"] == "project"
    assert set(skills["proj"]) >= {"name", "description", "location", "path", "has_script"}


async def test_install_and_remove(skills_client: Any) -> None:
    client, settings = skills_client
    r = await client.post("/skills/install", json={"source": "acme/skills/weather"})
    assert r.status_code == 201, r.text
    assert r.json() == {
        "name": "weather",
        "description": "Tells the weather.",
        "status": "installed",
        "location": "global",
    }
    skill = next(
        s for s in (await client.get("/skills")).json()["skills"] if s["name"] == "weather"
    )
    assert skill["has_script"] is True and skill["location"] == "global"
    assert (settings.skills_dir / "weather" / "docs" / "notes.txt").read_text() == "notes"
    again = await client.post("/skills/install", json={"source": "acme/skills/weather"})
    assert again.status_code == 409
    r = await client.delete("/skills/weather")
    assert r.json() == {"status": "removed", "name": "weather"}
    assert _global_entries(settings) == []
    assert (await client.delete("/skills/weather")).status_code == 404


async def test_install_with_internal_link(skills_client: Any) -> None:
    client, settings = skills_client
    r = await client.post("/skills/install", json={"source": "acme/skills/inlink"})
    assert r.status_code == 201, r.text
    assert (settings.skills_dir / "inlink" / "b").read_text() == "a"


@pytest.mark.parametrize(
    ("source", "status"),
    [
        ("acme", 422),
        ("acme/skills", 422),
        ("acme/../x/y", 422),
        ("nobody/none/x", 404),
        ("acme/skills/missing", 404),
        ("acme/skills/file.txt", 422),
        ("acme/skills/nomanifest", 422),
        ("acme/skills/badname", 422),
        ("acme/skills/nofront", 422),
        ("acme/skills/clash", 409),
        ("acme/skills/outlink", 422),
        ("acme/skills/many", 422),
        ("acme/skills/huge", 422),
    ],
)
async def test_refusals_leave_nothing(skills_client: Any, source: str, status: int) -> None:
    client, settings = skills_client
    r = await client.post("/skills/install", json={"source": source})
    assert r.status_code == status, r.text
    assert r.json()["detail"] and r.json()["code"]
    assert _global_entries(settings) == []


async def test_path_traversal_in_listing_is_refused(tmp_path: Path) -> None:
    repos = {"a/b": {"s/SKILL.md": manifest("s"), "s/x.txt": b"x"}}
    with fake_codehost(repos, lie_about_paths={"s/x.txt": "s/../../etc/passwd"}) as url:
        settings = Settings(
            home=tmp_path / "h", api_key=API_KEY, project_dir=tmp_path, skills_host_url=url
        )  # type: ignore[arg-type]
        app = create_app(settings)
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(
                transport=transport,
                base_url="http://t",
                headers={"Authorization": f"Bearer {API_KEY}"},
            ) as c:
                r = await c.post("/skills/install", json={"source": "a/b/s"})
                assert r.status_code == 422
                assert _global_entries(settings) == []


async def test_builtin_and_project_removal_forbidden(skills_client: Any) -> None:
    client, _ = skills_client
    assert (await client.delete("/skills/init")).status_code == 403
    assert (await client.delete("/skills/proj")).status_code == 403


async def test_unreachable_host_is_502(tmp_path: Path) -> None:
    from tests.support.live import free_port

    settings = Settings(
        home=tmp_path / "h",
        api_key=API_KEY,
        project_dir=tmp_path,
        skills_host_url=f"http://127.0.0.1:{free_port()}",
    )  # type: ignore[arg-type]
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://t", headers={"Authorization": f"Bearer {API_KEY}"}
        ) as c:
            r = await c.post("/skills/install", json={"source": "a/b/c"})
            assert r.status_code == 502 and r.json()["code"] == "upstream_error"


# -- a hostile code host: each refusal is a clear 422 and nothing is left behind --

DEEP = "/".join(f"level-{i:03d}" for i in range(700))
BOMB = b"""---
name: bomb
description: Laughs.
a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
parameters: [*f, *f, *f, *f, *f, *f, *f, *f, *f]
---
Boom.
"""
HOSTILE: dict[str, dict[str, Any]] = {
    "evil/skills": {
        "nul/SKILL.md": manifest("nul"),
        "nul/bad\x00name.txt": b"x",
        "long/SKILL.md": manifest("long"),
        f"long/{'a' * 300}.txt": b"x",
        "twin/SKILL.md": manifest("twin"),
        "twin/a/b.txt": b"inside",
        "deep/SKILL.md": manifest("deep"),
        f"deep/{DEEP}/leaf.txt": b"x",
        "newline/SKILL.md": b'---\nname: "newline\\n"\ndescription: Ends in a newline.\n---\nGo.\n',
        "bomb/SKILL.md": BOMB,
        "many/SKILL.md": manifest("many"),
        **{f"many/f{i}.txt": b"x" for i in range(300)},
    }
}
# "twin" lists "a" both as a folder (above) and as a file, whose content it serves.
TWIN_FILE = {"name": "a", "path": "twin/a", "type": "file", "size": 1}


@pytest.fixture
async def hostile_client(
    tmp_path: Path,
) -> AsyncIterator[tuple[httpx.AsyncClient, Settings, list[str]]]:
    log: list[str] = []
    with fake_codehost(
        HOSTILE,
        extra_entries={"twin": [TWIN_FILE]},
        extra_files={"twin/a": b"a file"},
        log=log,
    ) as url:
        settings = Settings(
            home=tmp_path / "home", api_key=API_KEY, project_dir=tmp_path, skills_host_url=url
        )  # type: ignore[arg-type]
        app = create_app(settings)
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(
                transport=transport,
                base_url="http://t",
                headers={"Authorization": f"Bearer {API_KEY}"},
            ) as c:
                yield c, settings, log


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("evil/skills/nul", "a name with a NUL or control character: 'bad\\x00name.txt'"),
        ("evil/skills/long", "a name longer than 255 bytes"),
        ("evil/skills/twin", "lists 'a' more than once, or as both a file and a folder"),
        ("evil/skills/deep", "nested more than 10 deep"),
        ("evil/skills/newline", "SKILL.md 'name' must be lower-case letters"),
        ("evil/skills/bomb", "may not use YAML anchors or aliases"),
        ("evil/skills/many", "more than 200 files"),
        ("evil\n/skills/many", "source must look like"),
    ],
)
async def test_hostile_trees_are_422(hostile_client: Any, source: str, message: str) -> None:
    client, settings, _ = hostile_client
    r = await client.post("/skills/install", json={"source": source})
    assert r.status_code == 422, r.text
    assert r.json()["code"] == "invalid_request" and message in r.json()["detail"], r.text
    assert _global_entries(settings) == []
    names = [s["name"] for s in (await client.get("/skills")).json()["skills"]]
    assert not {"nul", "long", "twin", "deep", "newline", "bomb", "many"} & set(names)


async def test_file_count_is_checked_before_downloading(hostile_client: Any) -> None:
    client, _, log = hostile_client
    r = await client.post("/skills/install", json={"source": "evil/skills/many"})
    assert r.status_code == 422 and "more than 200 files" in r.json()["detail"]
    fetched = [p for p in log if p.startswith("/repos/evil/skills/contents/many/")]
    assert fetched == []  # only the folder was listed; no file was downloaded


async def test_a_deep_tree_stops_listing_early(hostile_client: Any) -> None:
    client, _, log = hostile_client
    r = await client.post("/skills/install", json={"source": "evil/skills/deep"})
    assert r.status_code == 422
    assert len(log) < 20  # the repo, then at most 11 folder listings, not 700


async def test_a_slow_host_hits_the_install_time_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from famulus.skills import installer

    monkeypatch.setattr(installer, "INSTALL_TIMEOUT_S", 0.5)
    repos = {"slow/skills": {"s/SKILL.md": manifest("s"), **{f"s/f{i}": b"x" for i in range(20)}}}
    with fake_codehost(repos, delay=0.1) as url:
        settings = Settings(
            home=tmp_path / "h", api_key=API_KEY, project_dir=tmp_path, skills_host_url=url
        )  # type: ignore[arg-type]
        app = create_app(settings)
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(
                transport=transport,
                base_url="http://t",
                headers={"Authorization": f"Bearer {API_KEY}"},
            ) as c:
                r = await c.post("/skills/install", json={"source": "slow/skills/s"})
    assert r.status_code == 502 and r.json()["code"] == "upstream_error", r.text
    assert "did not deliver 'slow/skills/s' within 0.5 s" in r.json()["detail"]
    assert _global_entries(settings) == []


async def test_an_entry_outside_its_listed_folder_is_422(tmp_path: Path) -> None:
    """A listing may hold only the folder's own children: a deeper path listed
    first, then the same name as a file, would otherwise clash on disk."""
    repos = {"a/b": {"s/SKILL.md": manifest("s")}}
    extra = [
        {"name": "y", "path": "s/x/y", "type": "file", "size": 1},
        {"name": "x", "path": "s/x", "type": "file", "size": 1},
    ]
    files = {"s/x/y": b"y", "s/x": b"x"}
    with fake_codehost(repos, extra_entries={"s": extra}, extra_files=files) as url:
        settings = Settings(
            home=tmp_path / "h", api_key=API_KEY, project_dir=tmp_path, skills_host_url=url
        )  # type: ignore[arg-type]
        app = create_app(settings)
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(
                transport=transport,
                base_url="http://t",
                headers={"Authorization": f"Bearer {API_KEY}"},
            ) as c:
                r = await c.post("/skills/install", json={"source": "a/b/s"})
    assert r.status_code == 422, r.text
    assert "listed 's/x/y' as part of the folder 's'" in r.json()["detail"]
    assert _global_entries(settings) == []
