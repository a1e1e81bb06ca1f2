"""What the agent loop reports to, and asks of, whoever drives it.

The chat run implements this: it turns reports into session events and
history rows and answers approval requests. Keeping it a protocol keeps the
agent package free of HTTP, storage and session concerns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic_ai.messages import ModelMessage, ModelResponse, ToolReturnPart


@dataclass(frozen=True)
class Decision:
    approved: bool
    reason: str | None = None
    # Set when a rule, not the person, refused (a read-only automation): the
    # model is told exactly this instead of "the person declined".
    refusal: str | None = None


class EventSink(Protocol):
    async def emit(self, type_: str, /, **fields: Any) -> None:
        """A persisted event (tool_call, text ...)."""

    def emit_live(self, type_: str, /, **fields: Any) -> None:
        """A live-only event (text_delta)."""

    async def response_complete(self, response: ModelResponse) -> None:
        """A whole model response of the main agent (depth 0) is in."""

    async def tool_returned(self, part: ToolReturnPart, *, error: bool) -> None:
        """A tool result of the main agent is in."""

    async def ingested(self, enqueue_id: str, messages: tuple[ModelMessage, ...]) -> None:
        """A queued message was taken into the run."""

    async def decide(
        self, tool_id: str, name: str, args: dict[str, Any], description: str
    ) -> Decision:
        """Ask the person whether a tool may run."""


@dataclass
class AgentDeps:
    """Per-run dependencies handed to every tool through ``RunContext.deps``."""

    sink: EventSink
    session_id: str
    run_id: str
    timezone: str
    depth: int = 0
    parent_id: str | None = None
    descriptions: dict[str, str] = field(default_factory=dict)
    # Text of the model response being generated (what history keeps if the run
    # stops), and the streamed part of it no `text` event has carried yet.
    partial_text: list[str] = field(default_factory=list)
    unsent_text: list[str] = field(default_factory=list)
