"""The agent loop as explicit steps, each turned into sink reports.

Every node is streamed: model-response events become ``text_delta`` (live),
``text`` and ``reasoning``; tool events become ``tool_call``/``tool_result``;
a delivered queued message becomes ``ingested``. A run that stops mid-text
(cancel, failure, shutdown) still sends the text streamed so far as its ``text``
event. The same driver runs the main agent (depth 0) and sub-agents (depth ≥ 1,
history not written).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import (
    EnqueuedMessagesEvent,
    FunctionToolCallEvent,
    FunctionToolResultEvent,
    ModelMessage,
    PartDeltaEvent,
    PartEndEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    ThinkingPart,
    ToolReturnPart,
    UserContent,
)
from pydantic_ai.run import AgentRun
from pydantic_ai.usage import RunUsage, UsageLimits

from famulus.agent.outcome import ToolFailure
from famulus.agent.secret_args import public_args
from famulus.agent.sink import AgentDeps

log = logging.getLogger(__name__)

PREVIEW_CHARS = 200
ERROR_OUTCOMES = ("failed", "retried")


@dataclass
class DriveResult:
    output: str
    usage: RunUsage
    messages: list[ModelMessage]
    pending: int  # queued messages never delivered


def result_text(part: ToolReturnPart) -> str:
    content = part.content
    if isinstance(content, str):
        return content
    return json.dumps(content, default=str, ensure_ascii=False)


def _place(d: AgentDeps) -> dict[str, Any]:
    """Where an event comes from: its depth, and for a sub-agent (depth > 0) the
    ``parent_id`` of the tool call that started it, so a client can tell two
    sub-agents running at once apart."""
    if d.depth == 0:
        return {"depth": 0}
    return {"depth": d.depth, "parent_id": d.parent_id}


class _NodeReporter:
    """Per-run state for turning pydantic-ai events into sink reports."""

    def __init__(self, deps: AgentDeps, descriptions: dict[str, str]) -> None:
        self.deps = deps
        self.descriptions = descriptions
        self.started: dict[str, float] = {}

    async def model_event(self, event: Any) -> None:
        d = self.deps
        if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
            self._delta(event.part.content)
        elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
            self._delta(event.delta.content_delta)
        elif isinstance(event, PartEndEvent):
            if isinstance(event.part, TextPart):
                d.unsent_text.clear()
                if event.part.content:
                    await d.sink.emit("text", content=event.part.content, **_place(d))
            elif isinstance(event.part, ThinkingPart) and event.part.content:
                await d.sink.emit("reasoning", content=event.part.content, **_place(d))
        elif isinstance(event, EnqueuedMessagesEvent) and d.depth == 0:
            await d.sink.ingested(event.enqueue_id, event.messages)

    def _delta(self, content: str) -> None:
        if content:
            d = self.deps
            d.partial_text.append(content)
            d.unsent_text.append(content)
            d.sink.emit_live("text_delta", content=content, **_place(d))

    async def flush_unsent(self) -> None:
        """The run stopped mid-text: send what was streamed as its ``text`` event,
        so every ``text_delta`` is followed by a ``text`` (none when already sent)."""
        d = self.deps
        unsent, d.unsent_text = "".join(d.unsent_text), []
        if not unsent:
            return
        try:
            await d.sink.emit("text", content=unsent, **_place(d))
        except Exception:  # the run's own failure is what matters to report
            log.exception("could not send the partial text of run %s", d.run_id)

    async def tool_event(self, event: Any) -> None:
        d = self.deps
        if isinstance(event, FunctionToolCallEvent):
            part = event.part
            self.started[part.tool_call_id] = time.monotonic()
            await d.sink.emit(
                "tool_call",
                tool_id=part.tool_call_id,
                name=part.tool_name,
                args=public_args(part.args_as_dict()),
                description=self.descriptions.get(part.tool_name, part.tool_name),
                depth=d.depth,
                parent_id=d.parent_id,
            )
        elif isinstance(event, FunctionToolResultEvent):
            await self._tool_result(event.part)
        elif isinstance(event, EnqueuedMessagesEvent) and d.depth == 0:
            await d.sink.ingested(event.enqueue_id, event.messages)

    async def _tool_result(self, part: ToolReturnPart) -> None:
        d = self.deps
        began = self.started.pop(part.tool_call_id, time.monotonic())
        text = result_text(part)
        error = part.outcome in ERROR_OUTCOMES or isinstance(part.content, ToolFailure)
        await d.sink.emit(
            "tool_result",
            tool_id=part.tool_call_id,
            name=part.tool_name,
            result=text,
            preview=text[:PREVIEW_CHARS],
            duration_ms=int((time.monotonic() - began) * 1000),
            error=error,
            **_place(d),
        )
        if d.depth == 0:
            await d.sink.tool_returned(part, error=error)


async def drive(
    agent: Agent[AgentDeps, str],
    *,
    prompt: str | list[UserContent],
    history: list[ModelMessage],
    deps: AgentDeps,
    limits: UsageLimits,
    descriptions: dict[str, str],
    on_start: Callable[[AgentRun[AgentDeps, str]], None] | None = None,
) -> DriveResult:
    reporter = _NodeReporter(deps, descriptions)
    try:
        return await _walk(agent, reporter, prompt, history, limits, on_start)
    except (Exception, asyncio.CancelledError):
        await reporter.flush_unsent()
        raise


async def _walk(
    agent: Agent[AgentDeps, str],
    reporter: _NodeReporter,
    prompt: str | list[UserContent],
    history: list[ModelMessage],
    limits: UsageLimits,
    on_start: Callable[[AgentRun[AgentDeps, str]], None] | None,
) -> DriveResult:
    deps = reporter.deps
    async with agent.iter(prompt, message_history=history, deps=deps, usage_limits=limits) as run:
        if on_start is not None:
            on_start(run)
        async for node in run:
            if Agent.is_model_request_node(node):
                if deps.depth == 0:
                    await deps.sink.emit("thinking", status="Thinking…")
                async with node.stream(run.ctx) as stream:
                    async for event in stream:
                        await reporter.model_event(event)
            elif Agent.is_call_tools_node(node):
                deps.partial_text.clear()
                deps.unsent_text.clear()
                if deps.depth == 0:
                    await deps.sink.response_complete(node.model_response)
                async with node.stream(run.ctx) as tool_stream:
                    async for event in tool_stream:
                        await reporter.tool_event(event)
        assert run.result is not None
        return DriveResult(
            output=str(run.result.output),
            usage=run.usage,
            messages=run.all_messages(),
            pending=len(run.pending_messages),
        )
