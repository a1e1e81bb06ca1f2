"""Where ``/name`` chat messages find their skill.

A skills service in ``container.extras["skills"]`` may offer
``async invocation(name, arguments) -> str | None`` (the prompt that runs the
skill); otherwise its ``get(name)`` is used and the skill's SKILL.md
instructions become the prompt. No service, or no such skill: None, which the
chat API answers with 404 before any run starts.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

_INVOCATION = re.compile(r"^/([A-Za-z0-9][A-Za-z0-9_-]{0,63})(?:\s+(.*))?$", re.DOTALL)


def parse_invocation(message: str) -> tuple[str, str] | None:
    """('name', 'arguments') when the message invokes a skill, else None."""
    match = _INVOCATION.match(message.strip())
    if match is None:
        return None
    return match.group(1), (match.group(2) or "").strip()


def _prompt_from(skill: Any, arguments: str) -> str:
    name = getattr(skill, "name", "skill")
    instructions = getattr(skill, "instructions", "") or getattr(skill, "description", "")
    text = f"The person invoked the skill /{name}. Follow its instructions:\n\n{instructions}"
    return text + (f"\n\nArguments given: {arguments}" if arguments else "")


async def skill_prompt(extras: dict[str, Any], name: str, arguments: str) -> str | None:
    service = extras.get("skills")
    if service is None:
        return None
    invocation = getattr(service, "invocation", None)
    if invocation is not None:
        result = invocation(name, arguments)
        result = await result if inspect.isawaitable(result) else result
        return str(result) if result is not None else None
    getter = getattr(service, "get", None)
    skill = getter(name) if getter is not None else None
    if inspect.isawaitable(skill):
        skill = await skill
    return _prompt_from(skill, arguments) if skill is not None else None
