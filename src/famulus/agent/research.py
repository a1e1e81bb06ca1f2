"""The ``research`` tool: a sub-agent on the research model.

Its events reach the session at ``depth`` + 1 with ``parent_id`` set to the
research tool call, so a client can nest them. It only gets read-only tools
and its own, smaller usage limits; its usage is added to the parent run's.
Area toolsets whose id starts with ``read-only:`` (web search, page fetching)
are handed to it too; it never gets the ``research`` tool itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from pydantic_ai import Agent, RunContext
from pydantic_ai.toolsets import AbstractToolset, FunctionToolset
from pydantic_ai.usage import UsageLimits

from famulus.agent.driver import drive
from famulus.agent.sink import AgentDeps
from famulus.agent.tools import time_toolset, tool_descriptions
from famulus.llm.types import ResolvedModel
from famulus.usage.model import metered
from famulus.usage.tag import tagged

RESEARCH_LIMITS = UsageLimits(request_limit=8, tool_calls_limit=16, total_tokens_limit=200_000)
RESEARCH_INSTRUCTIONS = (
    "You are a research assistant working for another agent. Investigate the question "
    "with the tools you have and answer with a compact, factual report."
)

Resolver = Callable[[], Awaitable[ResolvedModel]]
READ_ONLY_PREFIX = "read-only:"


def read_only(toolsets: Sequence[AbstractToolset[Any]]) -> list[AbstractToolset[Any]]:
    """The toolsets an area marked safe for the research sub-agent."""
    return [t for t in toolsets if (t.id or "").startswith(READ_ONLY_PREFIX)]


def research_toolset(
    resolve: Resolver, shared: Sequence[AbstractToolset[Any]] = ()
) -> FunctionToolset[AgentDeps]:
    tools: FunctionToolset[AgentDeps] = FunctionToolset()

    @tools.tool
    async def research(ctx: RunContext[AgentDeps], question: str) -> str:
        """Hand a question to a research sub-agent and get its report back."""
        resolved = await resolve()
        sub_tools: list[AbstractToolset[AgentDeps]] = [time_toolset(), *shared]
        sub = Agent(
            metered(resolved),
            deps_type=AgentDeps,
            instructions=RESEARCH_INSTRUCTIONS,
            toolsets=sub_tools,
        )
        deps = AgentDeps(
            sink=ctx.deps.sink,
            session_id=ctx.deps.session_id,
            run_id=ctx.deps.run_id,
            timezone=ctx.deps.timezone,
            depth=ctx.deps.depth + 1,
            parent_id=ctx.tool_call_id,
            descriptions=tool_descriptions(sub_tools),
        )
        await ctx.deps.sink.emit("thinking", status="Researching…")
        with tagged(source="research"):
            result = await drive(
                sub,
                prompt=question,
                history=[],
                deps=deps,
                limits=RESEARCH_LIMITS,
                descriptions=deps.descriptions,
            )
        ctx.usage.incr(result.usage)
        return result.output

    return tools
