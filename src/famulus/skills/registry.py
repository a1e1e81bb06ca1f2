"""Skill discovery: builtin → project (``.skills/``) → global (``$FAMULUS_HOME/skills``).

Discovery reads the folders on every call: skills are a handful of small files,
and reading fresh means a skill dropped into a folder is usable at once with
no reload command. On a name clash the first found wins; the shadowed one is
logged once.

Every chat run lists the skills in its system prompt, so a parsed ``SKILL.md``
is kept while its modification and change times, size and inode are unchanged: YAML parsing was
most of the cost (about 1 ms a skill, see docs/performance.md). A script list
is read afresh every time.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

from famulus.errors import Forbidden, NotFound
from famulus.settings import Settings
from famulus.skills.skill import MANIFEST, Location, Skill, find_scripts, load_skill

log = logging.getLogger(__name__)

BUILTIN_DIR = Path(__file__).parent / "builtin"


def instructions(skill: Skill) -> str:
    """A skill's instructions as the agent gets them, by ``/name`` or ``load_skill``.

    A skill with scripts also gets told how to run them, through the
    ``run_skill_script`` tool (which asks the person first).
    """
    text = skill.instructions or skill.description
    if skill.scripts:
        text += (
            f"\n\nThis skill's folder holds scripts: {', '.join(skill.scripts)}. Run one,"
            f" when the instructions call for it, with the run_skill_script tool"
            f" (name '{skill.name}', the script's name when there are several, and args)."
        )
    return text


class SkillRegistry:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._warned: set[tuple[str, str]] = set()
        # folder -> (SKILL.md's (mtime, ctime, size, inode), the skill parsed from it)
        self._parsed: dict[Path, tuple[tuple[int, ...], Skill]] = {}

    def roots(self) -> list[tuple[Location, Path]]:
        return [
            ("builtin", BUILTIN_DIR),
            ("project", self.settings.project_dir / ".skills"),
            ("global", self.settings.skills_dir),
        ]

    def _scan(self, location: Location, root: Path, seen: set[Path]) -> list[Skill]:
        if not root.is_dir():
            return []
        skills = []
        for folder in sorted(p for p in root.iterdir() if p.is_dir()):
            if folder.name.startswith(".") or not (folder / MANIFEST).is_file():
                continue
            try:
                skills.append(self._load(folder, location))
                seen.add(folder)
            except Exception as exc:  # a broken skill must not hide the others
                log.warning("skipping skill at %s: %s", folder, exc)
        return skills

    def _load(self, folder: Path, location: Location) -> Skill:
        """The skill in ``folder``; its SKILL.md is parsed again only when changed.
        (The stat comes before the read: a change in between is seen next time.)"""
        stat = (folder / MANIFEST).stat()
        key = (stat.st_mtime_ns, stat.st_ctime_ns, stat.st_size, stat.st_ino)
        kept = self._parsed.get(folder)
        if kept is not None and kept[0] == key and kept[1].location == location:
            return replace(kept[1], scripts=find_scripts(folder))
        skill = load_skill(folder, location)
        self._parsed[folder] = (key, skill)
        return skill

    def all(self) -> list[Skill]:
        chosen: dict[str, Skill] = {}
        seen: set[Path] = set()
        for location, root in self.roots():
            for skill in self._scan(location, root, seen):
                first = chosen.get(skill.name)
                if first is None:
                    chosen[skill.name] = skill
                elif (skill.name, str(skill.path)) not in self._warned:
                    self._warned.add((skill.name, str(skill.path)))
                    log.warning(
                        "skill '%s' at %s is shadowed by the %s skill at %s",
                        skill.name,
                        skill.path,
                        first.location,
                        first.path,
                    )
        self._parsed = {f: kept for f, kept in self._parsed.items() if f in seen}
        return list(chosen.values())

    def get(self, name: str) -> Skill | None:
        return next((s for s in self.all() if s.name == name), None)

    def catalog(self) -> list[tuple[str, str]]:
        """(name, description) of every skill, for the system prompt's skills block."""
        return [(s.name, s.description) for s in self.all()]

    def invocation(self, name: str, arguments: str) -> str | None:
        """The prompt for ``/name arguments`` (None: no such skill)."""
        skill = self.get(name)
        if skill is None:
            return None
        text = f"The person invoked the skill /{skill.name}. Follow its instructions:\n\n"
        text += instructions(skill)
        return text + (f"\n\nArguments given: {arguments}" if arguments else "")

    def loaded(self, name: str) -> str | None:
        """What ``load_skill`` answers (None: no such skill): the same instructions
        ``/name`` gives, so a skill the agent chose runs as one the person forced."""
        skill = self.get(name)
        if skill is None:
            return None
        return (
            f"Instructions of the skill /{skill.name}, installed by the person;"
            f" follow them for the person's request:\n\n{instructions(skill)}"
        )

    def require(self, name: str) -> Skill:
        skill = self.get(name)
        if skill is None:
            raise NotFound(f"No skill named '{name}'. List skills with GET /skills.")
        return skill

    def removable(self, name: str) -> Skill:
        """The global skill to uninstall; builtin and project skills are refused."""
        skill = self.require(name)
        if skill.location == "builtin":
            raise Forbidden(f"'{name}' is a builtin skill and cannot be removed.")
        if skill.location == "project":
            raise Forbidden(
                f"'{name}' is a project skill in {skill.path}; remove that folder yourself."
            )
        return skill
