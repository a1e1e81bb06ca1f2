"""Install a skill from the code host's contents API (GitHub's shape).

Everything is fetched and checked in memory first, then written to a hidden
staging folder and moved into place with one rename. Any refusal or failure
leaves nothing behind. The host is not trusted: the whole tree is listed and
checked (names, depth, clashes, file count, declared sizes) before any file
is downloaded, so a hostile listing is refused with a 422 before it costs
downloads or reaches the file system, and the whole install has a time limit.
"""

from __future__ import annotations

import asyncio
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
MAX_FOLDERS = 50  # each is one listing request
MAX_DEPTH = 10  # folders below the skill's own
MAX_NAME_BYTES = 255  # one file or folder name, as most file systems allow
INSTALL_TIMEOUT_S = 120.0
_SEGMENT = re.compile(r"[A-Za-z0-9._-]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass
class Fetched:
    files: dict[str, bytes] = field(default_factory=dict)  # relative path → content
    links: dict[str, str] = field(default_factory=dict)  # relative path → relative target
    total: int = 0


@dataclass
class Listed:
    """The checked tree before any download: what to fetch and what to link."""

    files: dict[str, str] = field(default_factory=dict)  # relative path → host path
    sizes: dict[str, int] = field(default_factory=dict)  # relative path → declared size
    links: dict[str, str] = field(default_factory=dict)  # relative path → relative target
    folders: set[str] = field(default_factory=set)  # relative folder paths

    def claim(self, rel: str, kind: str) -> None:
        """Refuse a path used twice, or as both a file and a folder."""
        taken = rel in self.files or rel in self.links or rel in self.folders
        parents = [rel.rsplit("/", i)[0] for i in range(1, rel.count("/") + 1)]
        if taken or any(p in self.files or p in self.links for p in parents):
            raise InvalidRequest(
                f"The skill lists '{rel}' more than once, or as both a file and a folder."
            )
        if kind == "dir":
            self.folders.add(rel)


def parse_source(source: str) -> tuple[str, str, str]:
    """``owner/repo/path/to/skill`` → (owner, repo, path)."""
    parts = source.strip().strip("/").split("/")
    if len(parts) < 3 or not all(_SEGMENT.fullmatch(p) and p not in (".", "..") for p in parts):
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
        try:
            async with asyncio.timeout(INSTALL_TIMEOUT_S):
                fetched = await self._fetch(owner, repo, root)
        except TimeoutError as exc:
            raise UpstreamError(
                f"The skill host did not deliver '{source}' within {INSTALL_TIMEOUT_S:g} s;"
                " nothing was installed."
            ) from exc
        if MANIFEST not in fetched.files:
            raise InvalidRequest(f"'{source}' has no {MANIFEST} at its top level.")
        meta, _ = parse_manifest(fetched.files[MANIFEST].decode("utf-8", errors="replace"))
        if self.registry.get(meta["name"]) is not None:
            raise Conflict(f"A skill named '{meta['name']}' already exists; remove it first.")
        return self._write(meta["name"], fetched)

    async def _fetch(self, owner: str, repo: str, root: str) -> Fetched:
        async with httpx.AsyncClient(
            base_url=self.settings.skills_host_url.rstrip("/"),
            timeout=20.0,
            headers={"Accept": "application/vnd.github+json"},
        ) as http:
            await self._get(
                http, f"/repos/{owner}/{repo}", f"Repository '{owner}/{repo}' not found."
            )
            listed = await self._list_tree(http, owner, repo, root)
            return await self._download(http, f"/repos/{owner}/{repo}/contents/", listed)

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

    async def _list_tree(self, http: httpx.AsyncClient, owner: str, repo: str, root: str) -> Listed:
        """Walk the folders only; every entry is checked before anything is downloaded."""
        listed = Listed()
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
                if not isinstance(entry, dict):
                    raise UpstreamError("The skill host sent a folder listing of an unknown shape.")
                _take(root, folder, entry, listed, pending)
        return listed

    async def _download(self, http: httpx.AsyncClient, base: str, listed: Listed) -> Fetched:
        fetched = Fetched(links=listed.links)
        for rel, path in listed.files.items():
            data = await self._get(http, base + path, f"File '{path}' vanished during install.")
            content = _decode(data, rel)
            fetched.total += len(content)
            if fetched.total > MAX_BYTES:
                raise InvalidRequest("The skill is larger than 5 MiB.")
            fetched.files[rel] = content
        return fetched

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


def check_name(rel: str) -> None:
    """Every segment of a path inside the skill must be a name a file system keeps."""
    for name in rel.split("/"):
        shown = name.encode("unicode_escape").decode()[:80]
        if name in ("", ".", ".."):
            raise InvalidRequest(f"The skill contains an empty, '.' or '..' name in '{rel}'.")
        if _CONTROL.search(name):
            raise InvalidRequest(
                f"The skill contains a name with a NUL or control character: '{shown}'."
            )
        if len(name.encode("utf-8", errors="surrogatepass")) > MAX_NAME_BYTES:
            raise InvalidRequest(
                f"The skill contains a name longer than {MAX_NAME_BYTES} bytes: '{shown}…'."
            )


def _take(
    root: str, folder: str, entry: dict[str, Any], listed: Listed, pending: list[str]
) -> None:
    """Check one entry of ``folder``'s listing and note it (a folder is queued for listing)."""
    path, kind = entry.get("path"), entry.get("type")
    if not isinstance(path, str) or not path:
        raise UpstreamError("The skill host listed an entry without a path.")
    if not _inside(root, path) or path == root or ".." in path.split("/"):
        raise InvalidRequest(f"The skill contains a path outside its folder: '{path}'.")
    if posixpath.dirname(path) != folder:
        raise InvalidRequest(f"The skill host listed '{path}' as part of the folder '{folder}'.")
    rel = path[len(root) + 1 :]
    check_name(rel)
    if rel.count("/") + (kind == "dir") > MAX_DEPTH:
        raise InvalidRequest(f"The skill's folders are nested more than {MAX_DEPTH} deep.")
    if kind not in ("dir", "file", "symlink"):
        raise InvalidRequest(f"'{rel}' is a {kind}; skills may hold only files and folders.")
    listed.claim(rel, str(kind))
    if kind == "dir":
        if len(listed.folders) > MAX_FOLDERS:
            raise InvalidRequest(f"The skill has more than {MAX_FOLDERS} folders.")
        pending.append(path)
    elif kind == "symlink":
        target = posixpath.join(posixpath.dirname(path), str(entry.get("target", "")))
        if not _inside(root, target) or posixpath.normpath(target) == root:
            raise InvalidRequest(f"The link '{rel}' points outside the skill.")
        listed.links[rel] = posixpath.relpath(posixpath.normpath(target), posixpath.dirname(path))
    else:
        if len(listed.files) + 1 > MAX_FILES:
            raise InvalidRequest(f"The skill has more than {MAX_FILES} files.")
        size = entry.get("size")
        listed.sizes[rel] = size if isinstance(size, int) and size > 0 else 0
        if sum(listed.sizes.values()) > MAX_BYTES:
            raise InvalidRequest("The skill is larger than 5 MiB.")
        listed.files[rel] = path


def _decode(data: Any, rel: str) -> bytes:
    if not isinstance(data, dict) or "content" not in data:
        raise UpstreamError(f"The skill host sent no content for '{rel}'.")
    if data.get("encoding", "base64") != "base64":
        return str(data["content"]).encode()
    try:
        return base64.b64decode(str(data["content"]))
    except ValueError as exc:
        raise UpstreamError(f"The skill host sent undecodable content for '{rel}'.") from exc
