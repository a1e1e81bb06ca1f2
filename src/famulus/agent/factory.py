"""Assemble the main agent for one run: prompt, history, toolsets, limits.

``GET /context`` uses the same assembly, so the token count it reports is the
count of what the next run would really send.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import ModelMessage
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, FunctionToolset
from pydantic_ai.usage import UsageLimits

from famulus.agent import history as hist
from famulus.agent.approval import approval_capability
from famulus.agent.clock import zone_name
from famulus.agent.prompt import PromptInputs, build_system_prompt
from famulus.agent.research import read_only, research_toolset
from famulus.agent.retry import RetryingModel
from famulus.agent.sink import AgentDeps
from famulus.agent.tokens import messages_tokens, text_tokens, tool_tokens
from famulus.agent.tools import directives_toolset, time_toolset, tool_descriptions
from famulus.llm.types import ResolvedModel
from famulus.store.sessions import MessageRow, SessionRow
from famulus.usage.model import metered

log = logging.getLogger(__name__)

# Explicit budget of every chat run (pydantic-ai's defaults are not relied upon).
RUN_LIMITS = UsageLimits(request_limit=25, tool_calls_limit=50, total_tokens_limit=2_000_000)

Resolver = Callable[[], Awaitable[ResolvedModel]]


@dataclass
class Prepared:
    agent: Agent[AgentDeps, str]
    history: list[ModelMessage]
    system_prompt: str
    toolsets: list[AbstractToolset[AgentDeps]]
    descriptions: dict[str, str]
    conversation: hist.Conversation
    timezone: str

    def tool_definitions(self) -> list[ToolDefinition]:
        defs: list[ToolDefinition] = []
        for toolset in self.toolsets:
            tools = getattr(toolset, "tools", None)
            if isinstance(tools, dict):
                defs.extend(t.tool_def for t in tools.values() if hasattr(t, "tool_def"))
        return defs

    def estimate_tokens(self, extra_text: str = "") -> int:
        return (
            text_tokens(self.system_prompt)
            + messages_tokens(self.history)
            + tool_tokens(self.tool_definitions())
            + text_tokens(extra_text)
        )


class Recall(Protocol):
    """The memory text for a prompt (``memory.facade.MemoryFacade``)."""

    async def prompt_context(self, session_id: str, query: str) -> str: ...


@dataclass
class AgentInputs:
    """What the factory needs from the rest of famulus."""

    directives: str
    timezone_setting: str | None
    memory: Recall
    directives_service: Any
    resolve_research: Resolver
    # Toolsets contributed by the areas (memory, skills, web, mail, calendar ...);
    # each registers a provider with ``hooks.toolsets`` (see famulus/hooks.py).
    extra_toolsets: list[AbstractToolset[Any]] = field(default_factory=list)
    # (name, description) of the installed skills, listed in the system prompt
    skills: list[tuple[str, str]] = field(default_factory=list)


async def _memory_context(memory: Recall, session_id: str, query: str) -> str:
    """Recall must never stop a chat: on failure the run goes on without it."""
    try:
        return str(await memory.prompt_context(session_id, query))
    except Exception:
        log.exception("memory recall failed; answering without it")
        return ""


@functools.lru_cache(maxsize=32)
def _research(
    resolve: Callable[[], Awaitable[ResolvedModel]], shared: tuple[AbstractToolset[Any], ...]
) -> FunctionToolset[AgentDeps]:
    """The research tool for this set of shared toolsets, built once (area
    toolsets are built once too, so the key repeats from run to run)."""
    return research_toolset(resolve, shared)


def _distinct(toolsets: list[AbstractToolset[Any]]) -> list[AbstractToolset[Any]]:
    """Each tool name once. pydantic-ai stops a run whose toolsets offer one name
    twice, and a registered MCP server's tool (``<server>_<tool>``) can take a
    name famulus already uses, or another server's: the later toolset's tool is
    left out of the run, with a warning, so famulus's own tools always win.
    Toolsets that list their tools (``tools``) are the ones checked."""
    seen: set[str] = set()
    kept: list[AbstractToolset[Any]] = []
    for toolset in toolsets:
        tools = getattr(toolset, "tools", None)
        names = set(tools) if isinstance(tools, dict) else set()
        taken = names & seen
        if taken:
            log.warning(
                "left out of this run, their names are taken: %s (%s)", sorted(taken), toolset.label
            )
            # A toolset that can drop tools itself keeps listing the rest (descriptions).
            without = getattr(toolset, "without", None)
            toolset = without(taken) if callable(without) else toolset.filtered(_leave_out(taken))
        seen |= names
        kept.append(toolset)
    return kept


def _leave_out(
    taken: set[str],
) -> Callable[[RunContext[Any], ToolDefinition], bool]:
    def keep(ctx: RunContext[Any], tool_def: ToolDefinition) -> bool:
        return tool_def.name not in taken

    return keep


async def prepare(
    inputs: AgentInputs,
    resolved: ResolvedModel,
    session: SessionRow,
    rows: list[MessageRow],
    query: str,
) -> Prepared:
    conversation = hist.effective(rows)
    zone = zone_name(inputs.timezone_setting)
    memory_text = await _memory_context(inputs.memory, session.session_id, query)
    area_toolsets = list(inputs.extra_toolsets)
    toolsets: list[AbstractToolset[AgentDeps]] = _distinct(
        [
            time_toolset(),
            _research(inputs.resolve_research, tuple(read_only(area_toolsets))),
            directives_toolset(inputs.directives_service),
            *area_toolsets,
        ]
    )
    system_prompt = build_system_prompt(
        PromptInputs(
            directives=inputs.directives,
            timezone=zone,
            session_name=session.name,
            sources=session.sources,
            summary=conversation.summary,
            memory=memory_text,
            skills=inputs.skills,
        )
    )
    agent: Agent[AgentDeps, str] = Agent(
        metered(resolved, RetryingModel(resolved.model)),
        deps_type=AgentDeps,
        instructions=system_prompt,
        toolsets=toolsets,
        capabilities=[approval_capability()],
        model_settings={"max_tokens": resolved.max_output_tokens},
    )
    return Prepared(
        agent=agent,
        history=hist.to_model_messages(conversation.rows),
        system_prompt=system_prompt,
        toolsets=toolsets,
        descriptions=tool_descriptions(toolsets),
        conversation=conversation,
        timezone=zone,
    )
