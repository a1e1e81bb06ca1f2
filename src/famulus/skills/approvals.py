"""Which skills' scripts the person has let run, so automations may run them too.

A writable automation runs with approvals skipped: nobody is there to ask.
That must not become a way to run a script the person never agreed to, so an
automation runs a skill's script only if the person approved a run of that
skill in a chat, and only while the skill's files are the ones approved (a
fingerprint of the folder; an update needs one approval again).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from famulus.skills.skill import Skill
from famulus.store.kv import KVStore

KEY = "skills.script_approvals"
MAX_FILES = 500


def fingerprint(folder: Path) -> str:
    """SHA-256 over the folder's file names and contents."""
    digest = hashlib.sha256()
    files = sorted(p for p in folder.rglob("*") if p.is_file())[:MAX_FILES]
    for path in files:
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


class ScriptApprovals:
    def __init__(self, kv: KVStore) -> None:
        self.kv = kv

    async def approved(self, skill: Skill) -> bool:
        known = await self.kv.get(KEY, {})
        return isinstance(known, dict) and known.get(skill.name) == fingerprint(skill.path)

    async def record(self, skill: Skill) -> None:
        known = await self.kv.get(KEY, {})
        known = dict(known) if isinstance(known, dict) else {}
        known[skill.name] = fingerprint(skill.path)
        await self.kv.set(KEY, known)
