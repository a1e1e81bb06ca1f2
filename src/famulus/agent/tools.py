"""The main agent's own tools, as pydantic-ai toolsets.

``update_directives`` is the reference write tool: it changes what every
future prompt says, so it always asks first (``requires_approval``) unless the
message was sent with ``skip_approvals``.
"""

from __future__ import annotations

import functools
from typing import Literal

from pydantic_ai import RunContext
from pydantic_ai.toolsets import AbstractToolset, FunctionToolset

from famulus.agent.clock import describe_now, now_in
from famulus.agent.outcome import failure
from famulus.agent.sink import AgentDeps
from famulus.agent.toolcache import per_owner
from famulus.directives import MAX_DIRECTIVES_CHARS, DirectivesService


@functools.cache
def time_toolset() -> FunctionToolset[AgentDeps]:
    tools: FunctionToolset[AgentDeps] = FunctionToolset()

    @tools.tool
    def current_time(ctx: RunContext[AgentDeps]) -> str:
        """Get the current date, time and time zone of the person."""
        return f"{now_in(ctx.deps.timezone).isoformat()} — {describe_now(ctx.deps.timezone)}"

    return tools


@per_owner
def directives_toolset(directives: DirectivesService) -> FunctionToolset[AgentDeps]:
    tools: FunctionToolset[AgentDeps] = FunctionToolset()

    @tools.tool_plain(requires_approval=True)
    async def update_directives(mode: Literal["append", "replace"], text: str) -> str:
        """Change the person's standing directives (instructions in every future prompt).

        mode 'append' adds text as a new paragraph; 'replace' replaces them entirely.
        """
        current = await directives.get()
        new = text if mode == "replace" else (current.rstrip() + "\n\n" + text).strip()
        if len(new) > MAX_DIRECTIVES_CHARS:
            return failure(
                f"Not changed: directives may hold at most {MAX_DIRECTIVES_CHARS} characters."
            )
        await directives.put(new)
        return f"Directives updated ({mode}); they now hold {len(new)} characters."

    return tools


def tool_descriptions(toolsets: list[AbstractToolset[AgentDeps]]) -> dict[str, str]:
    """name → first line of the description, for tool_call/approval events."""
    found: dict[str, str] = {}
    for toolset in toolsets:
        tools = getattr(toolset, "tools", None)
        if not isinstance(tools, dict):
            continue
        for name, tool in tools.items():
            # A function tool has it; a toolset tool (an MCP server's) on its definition.
            tool_def = getattr(tool, "tool_def", None)
            description = (
                getattr(tool, "description", None) or getattr(tool_def, "description", None) or ""
            ).strip()
            found[name] = description.splitlines()[0] if description else name
    return found
