"""The MCP servers the person registered: their configs, their live sessions, their tools.

Registering a server is the person's act, over the authenticated API; the
agent has no tool that reaches this service. A server's env and header
*values* are secrets (tokens, keys): they go to the secrets file under
``mcp:<name>`` and leave this module only to start or reach the server; what
is shown is their names with a masked hint.

Each enabled server gets one ``Connection``, made on first use and kept, so
every run shares one process (stdio) or session (http). Changing how a server
is reached, disabling or removing it closes its session; ``stop`` (server
shutdown) closes them all, ending the stdio processes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mcp import types as mcp_types
from pydantic_ai.toolsets import AbstractToolset

from famulus.errors import Conflict, NotFound, UpstreamError
from famulus.llm.credentials import key_hint
from famulus.mcp import rules
from famulus.mcp.connection import Connection, McpFailure, ServerSpec, Timeouts, close_all
from famulus.mcp.toolset import ServerToolset, read_only_hint, tool_name
from famulus.secrets import SecretsStore
from famulus.store.mcp_servers import McpServerRow, McpServerStore

log = logging.getLogger(__name__)

SECRET_PREFIX = "mcp:"


@dataclass(frozen=True)
class ServerConfig:
    """A server as the person describes it (create, or the result of a change)."""

    name: str
    transport: str
    command: str | None = None
    args: tuple[str, ...] = ()
    url: str | None = None
    env: Mapping[str, str] | None = None
    headers: Mapping[str, str] | None = None
    trusted: bool = False
    enabled: bool = True


@dataclass(frozen=True)
class Change:
    """A PATCH: None leaves a field as it is; ``env``/``headers`` replace the whole map."""

    trusted: bool | None = None
    enabled: bool | None = None
    command: str | None = None
    args: tuple[str, ...] | None = None
    url: str | None = None
    env: Mapping[str, str] | None = None
    headers: Mapping[str, str] | None = None


@dataclass(frozen=True)
class ServerInfo:
    row: McpServerRow
    env: dict[str, str]  # name -> masked hint
    headers: dict[str, str]
    status: str  # "disabled", "idle", "connected" or "error"
    last_error: str | None
    tool_count: int | None


@dataclass(frozen=True)
class ToolInfo:
    name: str
    agent_name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool


class McpRegistry:
    def __init__(
        self, store: McpServerStore, secrets: SecretsStore, timeouts: Timeouts, log_dir: Path
    ) -> None:
        self.store = store
        self.secrets = secrets
        self.timeouts = timeouts
        self.log_dir = log_dir
        self._connections: dict[str, Connection] = {}

    # -- the person's API --------------------------------------------------------

    async def create(self, config: ServerConfig) -> ServerInfo:
        rules.check_name(config.name)
        row, env, headers = _checked(config)
        added = await self.store.add(row)
        if added is None:
            raise Conflict(f"An MCP server named '{config.name}' already exists.")
        self._store_secrets(config.name, env, headers)
        return self._info(added)

    async def get(self, name: str) -> ServerInfo:
        row = await self._row(name)
        await self._check([row.name])
        return self._info(row)

    async def all(self) -> list[ServerInfo]:
        rows = await self.store.all()
        await self._check([row.name for row in rows])
        return [self._info(row) for row in rows]

    async def _check(self, names: list[str]) -> None:
        """A status the person reads is current: open sessions idle a while are
        pinged (in parallel, a few seconds at most) so a dead one shows ``error``."""
        found = [self._connections[n] for n in names if n in self._connections]
        await asyncio.gather(*(c.check() for c in found))

    async def update(self, name: str, change: Change) -> ServerInfo:
        row = await self._row(name)
        env, headers = self._secrets(name)
        config = ServerConfig(
            name=name,
            transport=row.transport,
            command=_pick(change.command, row.command),
            args=change.args if change.args is not None else tuple(row.args),
            url=_pick(change.url, row.url),
            env=change.env if change.env is not None else env,
            headers=change.headers if change.headers is not None else headers,
            trusted=_pick(change.trusted, row.trusted),
            enabled=_pick(change.enabled, row.enabled),
        )
        new_row, new_env, new_headers = _checked(config)
        updated = await self.store.update(replace(new_row, created_at=row.created_at))
        if updated is None:  # removed meanwhile
            raise _not_found(name)
        self._store_secrets(name, new_env, new_headers)
        if _reached_differently(row, updated, (env, headers), (new_env, new_headers)):
            await self._forget(name)
        return self._info(updated)

    async def delete(self, name: str) -> None:
        await self._row(name)
        await self._forget(name)
        await self.store.delete(name)
        self.secrets.delete(SECRET_PREFIX + name)

    async def tools(self, name: str) -> list[ToolInfo]:
        """The server's tools, starting it now if need be (the person asked, so
        no back-off). 409 while disabled, 502 when it cannot be reached."""
        row = await self._row(name)
        if not row.enabled:
            raise Conflict(f"MCP server '{name}' is disabled; enable it to list its tools.")
        try:
            found = await self._connection(row).open(now=True)
        except McpFailure as exc:
            raise UpstreamError(f"MCP server '{name}' failed: {exc}") from exc
        return [_tool_info(name, tool) for tool in found]

    # -- the agent's tools ---------------------------------------------------------

    async def toolsets(self) -> list[AbstractToolset[Any]]:
        """Asked on every run: one toolset per enabled server that answers. A server
        that does not (or is backing off) is left out of this run, never waited on
        past the connect timeout; the servers are reached in parallel."""
        rows = [row for row in await self.store.all() if row.enabled]
        found = await asyncio.gather(*(self._toolset(row) for row in rows))
        return [toolset for toolset in found if toolset is not None]

    async def _toolset(self, row: McpServerRow) -> ServerToolset | None:
        connection = self._connection(row)
        try:
            tools = await connection.ready()
        except McpFailure as exc:
            log.info("MCP server %r left out of this run: %s", row.name, exc)
            return None
        return ServerToolset(connection, tools, trusted=row.trusted)

    async def stop(self) -> None:
        connections, self._connections = list(self._connections.values()), {}
        await close_all(connections)

    # -- helpers -------------------------------------------------------------------

    async def _row(self, name: str) -> McpServerRow:
        row = await self.store.get(name)
        if row is None:
            raise _not_found(name)
        return row

    def _connection(self, row: McpServerRow) -> Connection:
        connection = self._connections.get(row.name)
        if connection is None:
            env, headers = self._secrets(row.name)
            spec = ServerSpec(
                name=row.name,
                transport=row.transport,
                command=row.command,
                args=tuple(row.args),
                url=row.url,
                env=env,
                headers=headers,
            )
            connection = Connection(spec, self.timeouts, self.log_dir)
            self._connections[row.name] = connection
        return connection

    async def _forget(self, name: str) -> None:
        connection = self._connections.pop(name, None)
        if connection is not None:
            await connection.close()

    def _secrets(self, name: str) -> tuple[dict[str, str], dict[str, str]]:
        stored = self.secrets.get(SECRET_PREFIX + name)
        if not isinstance(stored, dict):
            return {}, {}
        return _str_map(stored.get("env")), _str_map(stored.get("headers"))

    def _store_secrets(self, name: str, env: Mapping[str, str], headers: Mapping[str, str]) -> None:
        if env or headers:
            self.secrets.set(SECRET_PREFIX + name, {"env": dict(env), "headers": dict(headers)})
        else:
            self.secrets.delete(SECRET_PREFIX + name)

    def _info(self, row: McpServerRow) -> ServerInfo:
        env, headers = self._secrets(row.name)
        connection = self._connections.get(row.name)
        status, error, count = "idle", None, None
        if connection is not None:
            status, error = connection.state, connection.last_error
            count = len(connection.tools) if connection.tools is not None else None
        return ServerInfo(
            row=row,
            env={k: key_hint(v) or "" for k, v in env.items()},
            headers={k: key_hint(v) or "" for k, v in headers.items()},
            status="disabled" if not row.enabled else status,
            last_error=error,
            tool_count=count,
        )


def _checked(config: ServerConfig) -> tuple[McpServerRow, dict[str, str], dict[str, str]]:
    """The row and secrets for ``config``, or a 422 naming what is wrong."""
    env, headers = dict(config.env or {}), dict(config.headers or {})
    command, url, args = None, None, list(config.args)
    if config.transport == "stdio":
        for field, given in (("url", config.url), ("headers", headers)):
            if given:
                rules.refuse(field, "stdio")
        command = rules.check_stdio(config.command, args, env)
    else:
        for field, value in (("command", config.command), ("args", args), ("env", env)):
            if value:
                rules.refuse(field, "http")
        url = rules.check_http(config.url, headers)
    row = McpServerRow(
        name=config.name,
        transport=config.transport,
        command=command,
        args=args,
        url=url,
        trusted=config.trusted,
        enabled=config.enabled,
        created_at="",
    )
    return row, env, headers


def _reached_differently(
    old: McpServerRow,
    new: McpServerRow,
    old_secrets: tuple[dict[str, str], dict[str, str]],
    new_secrets: tuple[dict[str, str], dict[str, str]],
) -> bool:
    """Whether the open session no longer matches the config (``trusted`` alone
    changes nothing about it: it is read per run)."""
    how = (old.command, old.args, old.url, old.enabled)
    return how != (new.command, new.args, new.url, new.enabled) or old_secrets != new_secrets


def _tool_info(server: str, tool: mcp_types.Tool) -> ToolInfo:
    return ToolInfo(
        name=tool.name,
        agent_name=tool_name(server, tool.name),
        description=tool.description or "",
        input_schema=dict(tool.input_schema),
        read_only=read_only_hint(tool),
    )


def _pick(new: Any, old: Any) -> Any:
    return old if new is None else new


def _str_map(value: object) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items()}


def _not_found(name: str) -> NotFound:
    return NotFound(f"No MCP server named '{name}'. List them with GET /mcp/servers.")
