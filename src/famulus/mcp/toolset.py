"""A registered MCP server's tools as one agent toolset, named ``<server>_<tool>``.

Built per run from the server's tool list at the start of the run; the calls
go through the server's kept ``Connection``. The toolset does what
pydantic-ai's ``prefixed()`` and ``approval_required()`` wrappers do, in one
place, because famulus also needs the tools' descriptions for its events
(``tools`` below is read by ``agent.tools.tool_descriptions``) and a refusal
for read-only automations:

- a tool of a server the person did not mark trusted asks first: it raises
  ``ApprovalRequired`` like any ``requires_approval`` tool, so the run sends
  ``approval_needed`` and waits for ``POST /tools/result`` (a read-only
  automation's run refuses it without asking);
- in a read-only automation a trusted server's tool runs only when the server
  declares it read-only (the MCP ``readOnlyHint`` annotation); any other is
  refused, since nothing else says it does not change data;
- a call that fails (server down, crashed, too slow, a tool error) returns
  ``MCP server '<name>' failed: …`` as a ``ToolFailure``, so the model reads
  it and the run goes on.
"""

from __future__ import annotations

import re
from typing import Any

import pydantic_core
from mcp import types as mcp_types
from pydantic_ai import RunContext
from pydantic_ai.exceptions import ApprovalRequired
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, ToolsetTool

from famulus.agent import scope
from famulus.agent.outcome import failure
from famulus.mcp.connection import Connection, McpFailure

# The server validates the arguments against its own schema; here they only
# need to be a JSON object.
_ARGS = pydantic_core.SchemaValidator(
    pydantic_core.core_schema.dict_schema(
        pydantic_core.core_schema.str_schema(), pydantic_core.core_schema.any_schema()
    )
)
MAX_RETRIES = 1
MAX_NAME = 64
MAX_RESULT_CHARS = 50_000
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def tool_name(server: str, tool: str) -> str:
    """``<server>_<tool>``, with anything a model API refuses in a tool name
    (only letters, digits, ``_``, ``-``; at most 64) replaced or cut."""
    return f"{server}_{_UNSAFE.sub('_', tool)}"[:MAX_NAME]


def read_only_hint(tool: mcp_types.Tool) -> bool:
    annotations = tool.annotations
    return bool(annotations is not None and annotations.read_only_hint)


class ServerToolset(AbstractToolset[Any]):
    def __init__(
        self, connection: Connection, tools: list[mcp_types.Tool], *, trusted: bool
    ) -> None:
        self.connection = connection
        self.trusted = trusted
        server = connection.name
        self._originals: dict[str, mcp_types.Tool] = {}
        for t in tools:  # two tools that map to one name: the first wins
            self._originals.setdefault(tool_name(server, t.name), t)
        self.tools: dict[str, ToolsetTool[Any]] = {
            name: ToolsetTool(
                toolset=self,
                tool_def=ToolDefinition(
                    name=name,
                    description=t.description or f"{t.name} (MCP server {server})",
                    parameters_json_schema=dict(t.input_schema),
                ),
                max_retries=MAX_RETRIES,
                args_validator=_ARGS,
            )
            for name, t in self._originals.items()
        }

    def without(self, names: set[str]) -> ServerToolset:
        """This toolset less the tools named ``names`` (as the agent sees them):
        the run leaves out a tool whose name another toolset already uses."""
        kept = [t for name, t in self._originals.items() if name not in names]
        return ServerToolset(self.connection, kept, trusted=self.trusted)

    @property
    def id(self) -> str:
        return f"mcp:{self.connection.name}"

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        return dict(self.tools)

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        if not self.trusted and not ctx.tool_call_approved:
            raise ApprovalRequired
        original = self._originals[name]
        if scope.read_only() and not (self.trusted and read_only_hint(original)):
            return failure(scope.READ_ONLY_REFUSAL)
        server = self.connection.name
        try:
            result = await self.connection.call(original.name, tool_args)
        except McpFailure as exc:
            return failure(f"MCP server '{server}' failed: {exc}")
        scope.used(f"mcp:{server}")
        if isinstance(result, str) and len(result) > MAX_RESULT_CHARS:
            # One careless tool must not fill the model's context window.
            cut = len(result) - MAX_RESULT_CHARS
            return f"{result[:MAX_RESULT_CHARS]}\n[… {cut} more characters cut by famulus]"
        return result
