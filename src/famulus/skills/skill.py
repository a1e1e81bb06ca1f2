"""A skill on disk and its ``SKILL.md``: YAML front matter, then instructions.

The front matter is the skill's public face (name, description, parameters);
the body is what the agent follows when the person invokes ``/name``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from famulus.errors import InvalidRequest

Location = Literal["builtin", "project", "global"]
NAME_RE = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?")  # whole name: fullmatch
SCRIPT_SUFFIXES = {".py", ".sh", ".bash", ".js", ".mjs", ".ts", ".rb", ".pl"}
MANIFEST = "SKILL.md"


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    location: Location
    path: Path
    instructions: str
    parameters: Any = None
    scripts: list[str] = field(default_factory=list)
    network: bool = False  # SKILL.md ``network: true``: its scripts may reach the network

    @property
    def has_script(self) -> bool:
        return bool(self.scripts)


def parse_manifest(text: str) -> tuple[dict[str, Any], str]:
    """Split and validate SKILL.md; raise InvalidRequest saying what is wrong."""
    if not text.startswith("---"):
        raise InvalidRequest("SKILL.md must start with YAML front matter between '---' lines.")
    parts = text.split("\n---", 1)
    if len(parts) != 2:
        raise InvalidRequest("SKILL.md front matter is not closed by a '---' line.")
    front = parts[0].removeprefix("---")
    try:
        _refuse_aliases(front)
        meta = yaml.safe_load(front)
    except yaml.YAMLError as exc:
        raise InvalidRequest(f"SKILL.md front matter is not valid YAML: {exc}.") from exc
    if not isinstance(meta, dict):
        raise InvalidRequest("SKILL.md front matter must be a mapping with name and description.")
    name, description = meta.get("name"), meta.get("description")
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise InvalidRequest(
            "SKILL.md 'name' must be lower-case letters, digits and '-', at most 64 characters."
        )
    if not isinstance(description, str) or not description.strip():
        raise InvalidRequest("SKILL.md needs a non-empty 'description'.")
    if not isinstance(meta.get("network", False), bool):
        raise InvalidRequest("SKILL.md 'network' must be true or false.")
    body = parts[1].split("\n", 1)[1] if "\n" in parts[1] else ""
    return meta, body.strip()


def _refuse_aliases(front: str) -> None:
    """Refuse YAML anchors and aliases before anything is built from them.

    Aliases let a few bytes stand for a huge structure (nested references
    that expand on every use: a 1 KB file became 47 MB of JSON); front
    matter has no need for them. Parsing to events builds nothing, so this
    check is cheap whatever the input.
    """
    for event in yaml.parse(front, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise InvalidRequest(
                "SKILL.md front matter may not use YAML anchors or aliases ('&name', '*name')."
            )


def find_scripts(folder: Path) -> list[str]:
    """Files besides SKILL.md that can be run: executable bit or a script suffix."""
    found: list[str] = []
    for item in sorted(folder.rglob("*")):
        if not item.is_file() or item.name == MANIFEST:
            continue
        if item.suffix in SCRIPT_SUFFIXES or item.stat().st_mode & 0o111:
            found.append(item.relative_to(folder).as_posix())
    return found


def load_skill(folder: Path, location: Location) -> Skill:
    meta, body = parse_manifest((folder / MANIFEST).read_text(encoding="utf-8"))
    return Skill(
        name=meta["name"],
        description=meta["description"].strip(),
        location=location,
        path=folder,
        instructions=body,
        parameters=meta.get("parameters"),
        scripts=find_scripts(folder),
        network=bool(meta.get("network", False)),
    )
