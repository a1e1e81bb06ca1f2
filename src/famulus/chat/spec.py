"""RunSpec: what one run was asked to do, fixed when it starts.

The run, its recorder and the turn builder all read it; none of them needs
the run manager to know which session, model or prompt a run is about.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from famulus.agent.scope import RunScope
from famulus.llm.types import ResolvedModel

COMMAND_CHARS = 200


@dataclass(frozen=True)
class RunSpec:
    run_id: str
    session_id: str
    session_name: str
    resolved: ResolvedModel
    prompt: Any  # str, or text and images as pydantic-ai user content
    skip_approvals: bool
    command: str  # the message as the person typed it, cut to COMMAND_CHARS
    scope: RunScope = field(default_factory=RunScope)
    approval_refusal: str | None = None  # refuse approvals with this, asking nobody

    @property
    def query(self) -> str:
        """What recall searches for: the prompt when it is text, else the typed message."""
        return self.prompt if isinstance(self.prompt, str) else self.command
