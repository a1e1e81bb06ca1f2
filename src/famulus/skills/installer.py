"""Install a skill from the code host's contents API (GitHub's shape).

Everything is fetched and checked in memory first (shape, size, file count,
paths, links, SKILL.md), then written to a hidden staging folder and moved
into place with one rename. Any refusal or failure leaves nothing behind.
"""

from __future__ import annotations

import base64
import posixpath
import re
import secrets
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from famulus.errors import Conflict, InvalidRequest, NotFound, UpstreamError
from famulus.settings import Settings
from famulus.skills.registry import SkillRegistry
from famulus.skills.skill import MANIFEST, Skill, load_skill, parse_manifest

MAX_BYTES = 5 * 1024 * 1024
MAX_FILES = 200
_SEGMENT = re.compile(r"^[A-Za-z0-9._-]+$")


@dataclass
class Fetched:
    files: dict[str, bytes] = field(default_factory=dict)  # relative path → content
    links: dict[str, str] = field(default_factory=dict)  # relative path → relative target
    total: int = 0


def parse_source(source: str) -> tuple[str, str, str]:
    """``owner/repo/path/to/skill`` → (owner, repo, path)."""
    parts = source.strip().strip("/").split("/")
    if len(parts) < 3 or not all(_SEGMENT.match(p) and p not in (".", "..") for p in parts):
        raise InvalidRequest(
            "source must look like '<owner>/<repo>/<path to skill>', e.g. 'acme/skills/weather'.",
            loc=["body", "source"],
        )
    return parts[0], parts[1], "/".join(parts[2:])


def _inside(root: str, path: str) -> bool:
    norm = posixpath.normpath(path)
    return norm == root or norm.startswith(root + "/")


class SkillInstaller:
    def __init__(self, settings: Settings, registry: SkillRegistry) -> None:
        self.settings = settings
        self.registry = registry

    async def install(self, source: str) -> Skill:
        owner, repo, root = parse_source(source)
        async with httpx.AsyncClient(
            base_url=self.settings.skills_host_url.rstrip("/"),
            timeout=20.0,
            headers={"Accept": "application/vnd.github+json"},
        ) as http:
            await self._get(
                http, f"/repos/{owner}/{repo}", f"Repository '{owner}/{repo}' not found."
            )
            fetched = await self._fetch_tree(http, owner, repo, root)
        if MANIFEST not in fetched.files:
            raise InvalidRequest(f"'{source}' has no {MANIFEST} at its top level.")
        meta, _ = parse_manifest(fetched.files[MANIFEST].decode("utf-8", errors="replace"))
        if self.registry.get(meta["name"]) is not None:
            raise Conflict(f"A skill named '{meta['name']}' already exists; remove it first.")
        return self._write(meta["name"], fetched)

    async def _get(self, http: httpx.AsyncClient, path: str, missing: str) -> Any:
        try:
            response = await http.get(path)
        except httpx.HTTPError as exc:
            raise UpstreamError(f"The skill host could not be reached: {exc}.") from exc
        if response.status_code == 404:
            raise NotFound(missing)
        if response.status_code >= 400:
            raise UpstreamError(f"The skill host answered {response.status_code} for {path}.")
        try:
            return response.json()
        except ValueError as exc:
            raise UpstreamError("The skill host sent a response that is not JSON.") from exc

    async def _fetch_tree(
        self, http: httpx.AsyncClient, owner: str, repo: str, root: str
    ) -> Fetched:
        fetched = Fetched()
        base = f"/repos/{owner}/{repo}/contents/"
        pending = [root]
        while pending:
            folder = pending.pop()
            listing = await self._get(
                http, base + folder, f"Path '{folder}' not found in {owner}/{repo}."
            )
            if not isinstance(listing, list):
                raise InvalidRequest(f"'{folder}' is a file; the source must name a skill folder.")
            for entry in listing:
                await self._take(http, base, root, entry, fetched, pending)
        return fetched

    async def _take(
        self,
        http: httpx.AsyncClient,
        base: str,
        root: str,
        entry: dict[str, Any],
        fetched: Fetched,
        pending: list[str],
    ) -> None:
        path, kind = str(entry.get("path", "")), entry.get("type")
        if not _inside(root, path) or path == root or ".." in path.split("/"):
            raise InvalidRequest(f"The skill contains a path outside its folder: '{path}'.")
        rel = path[len(root) + 1 :]
        if kind == "dir":
            pending.append(path)
            return
        if kind == "symlink":
            target = posixpath.join(posixpath.dirname(path), str(entry.get("target", "")))
            if not _inside(root, target) or posixpath.normpath(target) == root:
                raise InvalidRequest(f"The link '{rel}' points outside the skill.")
            fetched.links[rel] = posixpath.relpath(
                posixpath.normpath(target), posixpath.dirname(path)
            )
            return
        if kind != "file":
            raise InvalidRequest(f"'{rel}' is a {kind}; skills may hold only files and folders.")
        if len(fetched.files) + 1 > MAX_FILES:
            raise InvalidRequest(f"The skill has more than {MAX_FILES} files.")
        if fetched.total + int(entry.get("size") or 0) > MAX_BYTES:
            raise InvalidRequest("The skill is larger than 5 MiB.")
        data = await self._get(http, base + path, f"File '{path}' vanished during install.")
        content = _decode(data, rel)
        fetched.total += len(content)
        if fetched.total > MAX_BYTES:
            raise InvalidRequest("The skill is larger than 5 MiB.")
        fetched.files[rel] = content

    def _write(self, name: str, fetched: Fetched) -> Skill:
        skills_dir = self.settings.skills_dir
        skills_dir.mkdir(parents=True, exist_ok=True)
        final = skills_dir / name
        staging = skills_dir / f".install-{secrets.token_hex(6)}"
        try:
            staging.mkdir()
            for rel, content in fetched.files.items():
                target = staging / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(content)
                if Path(rel).suffix in {".sh", ".py", ".bash"}:
                    target.chmod(0o755)
            for rel, link in fetched.links.items():
                (staging / rel).parent.mkdir(parents=True, exist_ok=True)
                (staging / rel).symlink_to(link)
            if final.exists():
                raise Conflict(f"A skill named '{name}' already exists; remove it first.")
            staging.rename(final)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return load_skill(final, "global")

    def uninstall(self, name: str) -> Skill:
        skill = self.registry.removable(name)
        shutil.rmtree(skill.path)
        return skill


def _decode(data: Any, rel: str) -> bytes:
    if not isinstance(data, dict) or "content" not in data:
        raise UpstreamError(f"The skill host sent no content for '{rel}'.")
    if data.get("encoding", "base64") != "base64":
        return str(data["content"]).encode()
    try:
        return base64.b64decode(str(data["content"]))
    except ValueError as exc:
        raise UpstreamError(f"The skill host sent undecodable content for '{rel}'.") from exc
