"""``/mcp``: famulus as an MCP server over the Streamable HTTP transport.

The tools are ``mcp_server/tools.py``'s (service calls); this module only puts
them on HTTP. The ``mcp`` package's transport does the protocol; around it:

- exactly ``/mcp`` is served (a plain route, not a mount), so every other path
  under ``/mcp/`` stays with the route table;
- POST only: the transport runs *stateless* with JSON responses (each POST is
  answered on its own, no ``Mcp-Session-Id``, nothing to lose in a restart), so
  there is no event stream to GET and no session to DELETE; any other method
  is famulus's ``405`` (``Allow: POST``);
- the key is checked by ``deps.check_key`` (the verifier and throttle every
  protected route uses), so a missing or wrong key is famulus's ``401`` with
  ``WWW-Authenticate: Bearer`` and wrong keys count towards the ``429``.

The transport's session manager holds a task group for the requests it serves;
it runs from the container's start to its stop (``core.hooks``).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from fastapi import FastAPI, Request
from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import Receive, Scope, Send

from famulus.api.deps import check_key
from famulus.api.errors import domain_response, error_response
from famulus.errors import FamulusError
from famulus.mcp_server.tools import FamulusTools, build_server
from famulus.wiring import Container

PATH = "/mcp"
METHODS = ("POST",)
# The transport logs every request at INFO ("Terminating session: None");
# famulus's access log already has one line per request.
_CHATTY = ("mcp.server.streamable_http", "mcp.server.streamable_http_manager")


class McpEndpoint:
    """The ASGI app behind ``/mcp``: method check, key check, then the transport."""

    def __init__(self, server: MCPServer[Any]) -> None:
        self.server = server
        # The returned Starlette app is not used: the route is famulus's own
        # (below), and start/stop run its lifespan. What is kept is the
        # session manager it creates, which serves each request.
        server.streamable_http_app(
            streamable_http_path=PATH,
            stateless_http=True,
            json_response=True,
            # Host/Origin checks guard a server without credentials against DNS
            # rebinding; every request here carries the key, which a rebound
            # page cannot know, and famulus may be reached under any host name.
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self.manager: StreamableHTTPSessionManager = server.session_manager
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()

    async def start(self) -> None:
        """Run the transport's session manager (its task group serves the
        requests) in a task of its own, so starting and stopping may happen in
        different tasks, as an ASGI lifespan is free to do."""
        self._stopping = asyncio.Event()
        ready = asyncio.Event()

        async def hold() -> None:
            async with self.manager.run():
                ready.set()
                await self._stopping.wait()

        self._task = asyncio.create_task(hold(), name="famulus-mcp-transport")
        waiting = asyncio.create_task(ready.wait())
        await asyncio.wait({self._task, waiting}, return_when=asyncio.FIRST_COMPLETED)
        if not ready.is_set():
            waiting.cancel()
            await self._task  # it ended before it was ready: raise why

    async def stop(self) -> None:
        """Cancel the MCP requests still in flight and end the session manager."""
        if self._task is None:
            return
        self._stopping.set()
        await self._task
        self._task = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        if request.method not in METHODS:
            detail = f"Method {request.method} is not allowed on {PATH}."
            response = error_response(405, detail, headers={"Allow": ", ".join(METHODS)})
            await response(scope, receive, send)
            return
        try:
            await check_key(request)
        except FamulusError as exc:
            await domain_response(exc)(scope, receive, send)
            return
        await self.manager.handle_request(scope, receive, send)


def mount(app: FastAPI, c: Container) -> McpEndpoint:
    """Serve famulus's MCP tools at exactly ``/mcp`` (not in the OpenAPI document)."""
    tools = FamulusTools(c.memory.service, c.sessions, c.events, c.chat, c.automations)
    endpoint = McpEndpoint(build_server(tools))
    if c.settings.log_level.lower() not in ("debug", "trace"):
        for name in _CHATTY:
            logging.getLogger(name).setLevel(logging.WARNING)
    app.add_route(PATH, endpoint, include_in_schema=False)  # type: ignore[arg-type]
    c.core.hooks.on_start(endpoint.start)  # last to start, so first to stop
    c.core.hooks.on_stop(endpoint.stop)
    return endpoint
