"""One registered MCP server's live session: opened on first use, kept, reopened after a failure.

Why a kept session and not one per run: a stdio server is a process, and
starting one (often a ``npx``/``uvx`` download check, then an interpreter)
takes a second or more; a run should not pay that, nor leave a process per
run behind. The session is pydantic-ai's ``MCPToolset`` (over FastMCP's
client), entered here and left open; FastMCP runs it in a task of its own, so
any task (a run, an API request) may use it and any may close it.

Why nothing here may break a run: the server is someone else's program. It
may not start, may hang, may crash mid-call. Every wait is bounded
(``mcp_connect_timeout_s`` for starting it and reading its tool list,
``mcp_timeout_s`` for a call), every failure becomes a sentence
(``McpFailure``) and is kept as the server's ``last_error``, and a session
that died is dropped so the next use starts it again. Failing to start backs
off (2 s, 4 s, … up to 5 minutes) so a broken server is not respawned on
every run; the person's own request (listing its tools) always tries at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NoReturn

from fastmcp.client.transports import StdioTransport
from fastmcp.exceptions import ToolError
from mcp import types as mcp_types
from pydantic_ai.mcp import MCPToolset

log = logging.getLogger(__name__)

State = Literal["idle", "connected", "error"]

BACKOFF_FIRST_S = 2.0
BACKOFF_MAX_S = 300.0
# A session idle this long is pinged before a run relies on it, so a process
# that died in between is restarted instead of failing the run's first call.
PING_AFTER_IDLE_S = 10.0
PING_TIMEOUT_S = 5.0
CLOSE_TIMEOUT_S = 10.0
MAX_ERROR_CHARS = 500
MAX_LOG_BYTES = 1_000_000
# What a stdio server inherits from famulus's own environment: enough to find
# programs and write files, and never famulus's keys. The MCP SDK adds HOME,
# LOGNAME, PATH, SHELL, TERM and USER; the server's configured env comes last.
INHERITED_ENV = ("LANG", "LC_ALL", "TMPDIR")


class McpFailure(Exception):
    """A call or connection that did not work, said so the model and the person can read it."""


@dataclass(frozen=True)
class ServerSpec:
    """How to reach one server (what ``mcp_servers`` holds, with its secrets)."""

    name: str
    transport: str  # "stdio" or "http"
    command: str | None = None
    args: tuple[str, ...] = ()
    url: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Timeouts:
    call_s: float
    connect_s: float


def describe(exc: BaseException) -> str:
    """One readable line for ``exc``: the first real error inside exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip() or type(exc).__name__
    if isinstance(exc, TimeoutError) and not str(exc).strip():
        text = "timed out"
    return " ".join(text.split())[:MAX_ERROR_CHARS]


class Connection:
    """The session with one server and what is known about it (state, tools, last error)."""

    def __init__(self, spec: ServerSpec, timeouts: Timeouts, log_dir: Path) -> None:
        self.spec = spec
        self.timeouts = timeouts
        self.log_dir = log_dir
        self.state: State = "idle"
        self.last_error: str | None = None
        self.tools: list[mcp_types.Tool] | None = None
        self._toolset: MCPToolset[Any] | None = None
        self._lock = asyncio.Lock()
        self._failures = 0
        self._retry_at = 0.0
        self._last_ok = 0.0
        self._retired = False

    @property
    def name(self) -> str:
        return self.spec.name

    # -- opening and closing ---------------------------------------------------

    async def open(self, *, now: bool = False) -> list[mcp_types.Tool]:
        """The server's tools, starting it first if need be. ``now`` ignores the
        back-off (the person asked); a run respects it. Raises ``McpFailure``."""
        async with self._lock:
            if self._retired:  # a run still holding it must not start it again
                raise McpFailure("it was changed or removed while this run was using it")
            if self._toolset is not None and self.tools is not None:
                return self.tools
            wait = self._retry_at - time.monotonic()
            if not now and wait > 0:
                raise McpFailure(f"{self.last_error or 'it failed'} (next try in {wait:.0f} s)")
            return await self._connect()

    async def _connect(self) -> list[mcp_types.Tool]:
        toolset = self._build()
        try:
            async with asyncio.timeout(self.timeouts.connect_s):
                await toolset.__aenter__()
                try:
                    tools = await toolset.list_tools()
                except BaseException:
                    await self._close_quietly(toolset)
                    raise
        except TimeoutError:
            self._connect_failed(f"it did not answer within {self.timeouts.connect_s:g} s")
        except Exception as exc:
            verb = "reached" if self.spec.transport == "http" else "started"
            self._connect_failed(f"it could not be {verb}: {describe(exc)}")
        self._toolset, self.tools = toolset, tools
        self.state, self.last_error = "connected", None
        self._failures, self._retry_at, self._last_ok = 0, 0.0, time.monotonic()
        log.info("MCP server %r connected with %d tools", self.name, len(tools))
        return tools

    def _connect_failed(self, reason: str) -> NoReturn:
        self._failures += 1
        delay = min(BACKOFF_FIRST_S * 2 ** (self._failures - 1), BACKOFF_MAX_S)
        self._retry_at = time.monotonic() + delay
        self.state, self.last_error = "error", reason
        log.warning("MCP server %r: %s; next try in %.0f s", self.name, reason, delay)
        raise McpFailure(reason)

    def _build(self) -> MCPToolset[Any]:
        client: Any
        headers: dict[str, str] | None = None
        if self.spec.transport == "http":
            assert self.spec.url is not None
            client, headers = self.spec.url, dict(self.spec.headers) or None
        else:
            assert self.spec.command is not None
            client = StdioTransport(
                self.spec.command,
                list(self.spec.args),
                env=self._child_env(),
                keep_alive=False,  # leaving the session ends the process
                log_file=self._log_path(),
            )
        return MCPToolset(
            client,
            headers=headers,
            tool_error_behavior="error",  # famulus words the failure itself
            init_timeout=self.timeouts.connect_s,
            read_timeout=self.timeouts.call_s,
        )

    def _child_env(self) -> dict[str, str]:
        inherited = {k: os.environ[k] for k in INHERITED_ENV if k in os.environ}
        return {**inherited, **self.spec.env}

    def _log_path(self) -> Path:
        """The server's stderr goes to its own file, not into famulus's log; past
        1 MB the file is moved to ``<name>.log.1`` when the server (re)starts."""
        self.log_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        path = self.log_dir / f"{self.name}.log"
        with contextlib.suppress(OSError):
            if path.stat().st_size > MAX_LOG_BYTES:
                path.replace(path.with_name(f"{path.name}.1"))
        return path

    async def close(self) -> None:
        """End the session (and a stdio server's process) for good: its server was
        changed or removed, or famulus is stopping. The registry makes a new
        ``Connection`` for the next use; a run still holding this one gets a
        failure instead of starting the process again behind the registry's back."""
        async with self._lock:
            self._retired = True
            toolset, self._toolset, self.tools = self._toolset, None, None
            if self.state == "connected":
                self.state = "idle"
        if toolset is not None:
            await self._close_quietly(toolset)

    async def _drop(self, toolset: MCPToolset[Any], reason: str) -> None:
        """The session broke: forget it (unless already replaced) and remember why."""
        async with self._lock:
            if self._toolset is toolset:
                self._toolset, self.tools = None, None
            self.state, self.last_error = "error", reason
        log.warning("MCP server %r failed: %s; it is restarted on next use", self.name, reason)
        await self._close_quietly(toolset)

    async def _close_quietly(self, toolset: MCPToolset[Any]) -> None:
        if not toolset.is_running:
            return
        try:
            async with asyncio.timeout(CLOSE_TIMEOUT_S):
                await toolset.__aexit__(None, None, None)
        except Exception:
            log.debug("closing MCP server %r failed", self.name, exc_info=True)

    # -- using it --------------------------------------------------------------

    async def check(self) -> None:
        """Bring ``state`` up to date: an open session idle a while is pinged, and
        dropped (state ``error``) if it no longer answers. Never starts anything."""
        toolset = self._toolset
        idle = time.monotonic() - self._last_ok > PING_AFTER_IDLE_S
        if toolset is not None and idle and not await self._alive(toolset):
            await self._drop(toolset, "it had stopped answering")

    async def ready(self) -> list[mcp_types.Tool]:
        """The tools for a run: the open session (pinged when it has been idle a
        while, reopened if it died), else a fresh one. Raises ``McpFailure``."""
        await self.check()
        return await self.open()

    async def call(self, tool: str, args: dict[str, Any]) -> Any:
        """Call ``tool`` with ``args``; its result as pydantic-ai maps it. Raises
        ``McpFailure`` with a sentence for the model when it did not work."""
        await self.open()
        toolset = self._toolset
        if toolset is None:  # closed by someone else just now
            raise McpFailure("it was stopped")
        try:
            async with asyncio.timeout(self.timeouts.call_s):
                result = await toolset.direct_call_tool(tool, args)
        except ToolError as exc:
            self._last_ok = time.monotonic()
            raise McpFailure(f"the tool reported an error: {describe(exc)}") from exc
        except TimeoutError as exc:
            self.last_error = f"{tool} did not answer within {self.timeouts.call_s:g} s"
            raise McpFailure(f"no answer within {self.timeouts.call_s:g} s") from exc
        except Exception as exc:
            reason = describe(exc)
            if not await self._alive(toolset):
                await self._drop(toolset, reason)
                raise McpFailure(f"{reason} (it is restarted on next use)") from exc
            raise McpFailure(reason) from exc
        self._last_ok = time.monotonic()
        return result

    async def _alive(self, toolset: MCPToolset[Any]) -> bool:
        try:
            async with asyncio.timeout(PING_TIMEOUT_S):
                if not await toolset.client.ping():
                    return False
        except Exception:
            return False
        self._last_ok = time.monotonic()
        return True


async def close_all(connections: list[Connection]) -> None:
    """Close every connection at once; one that will not close does not hold up the rest."""
    with contextlib.suppress(Exception):
        await asyncio.gather(*(c.close() for c in connections), return_exceptions=True)
