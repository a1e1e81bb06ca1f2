"""Where ``/name`` chat messages find their skill.

The chat area asks a ``SkillPrompts`` port (the skills area's registry) for the
prompt that runs the skill; None, no such skill, which the chat API answers
with 404 before any run starts. The same port lists the skills (name and
description) for the system prompt, from which the agent picks one itself.
"""

from __future__ import annotations

import re
from typing import Protocol

_INVOCATION = re.compile(r"^/([A-Za-z0-9][A-Za-z0-9_-]{0,63})(?:\s+(.*))?$", re.DOTALL)


class SkillPrompts(Protocol):
    """``skills.registry.SkillRegistry`` has it."""

    def invocation(self, name: str, arguments: str) -> str | None: ...

    def catalog(self) -> list[tuple[str, str]]:
        """(name, description) of every skill the agent may load."""
        ...


def parse_invocation(message: str) -> tuple[str, str] | None:
    """('name', 'arguments') when the message invokes a skill, else None."""
    match = _INVOCATION.match(message.strip())
    if match is None:
        return None
    return match.group(1), (match.group(2) or "").strip()
