"""MCP servers the person registers; their tools become agent tools (``mcp/registry.py``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field

from famulus.api.deps import container
from famulus.api.schemas import RequestBody
from famulus.mcp.registry import Change, ServerConfig, ServerInfo, ToolInfo
from famulus.wiring import Container

router = APIRouter(tags=["mcp"])

Args = Annotated[list[str], Field(max_length=100)]
Secrets = Annotated[dict[str, str], Field(max_length=50)]


class ServerIn(RequestBody):
    name: str
    transport: Literal["stdio", "http"]
    command: str | None = None
    args: Args = []
    env: Secrets = {}
    url: str | None = None
    headers: Secrets = {}
    trusted: bool = False
    enabled: bool = True


class ServerPatch(RequestBody):
    """Leave out what stays; ``env`` and ``headers`` replace the whole map."""

    trusted: bool | None = None
    enabled: bool | None = None
    command: str | None = None
    args: Args | None = None
    env: Secrets | None = None
    url: str | None = None
    headers: Secrets | None = None


class ServerOut(BaseModel):
    name: str
    transport: str
    command: str | None
    args: list[str]
    env: dict[str, str] = Field(
        description="Variable name → masked hint; values are never returned."
    )
    url: str | None
    headers: dict[str, str] = Field(
        description="Header name → masked hint; values are never returned."
    )
    trusted: bool
    enabled: bool
    created_at: str
    status: Literal["disabled", "idle", "connected", "error"]
    last_error: str | None
    tool_count: int | None


class ServerList(BaseModel):
    servers: list[ServerOut]


class ToolOut(BaseModel):
    name: str
    agent_name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool


class ToolList(BaseModel):
    server: str
    tools: list[ToolOut]


class Status(BaseModel):
    status: str


def _out(info: ServerInfo) -> ServerOut:
    row = info.row
    return ServerOut(
        name=row.name,
        transport=row.transport,
        command=row.command,
        args=row.args,
        env=info.env,
        url=row.url,
        headers=info.headers,
        trusted=row.trusted,
        enabled=row.enabled,
        created_at=row.created_at,
        status=info.status,  # type: ignore[arg-type]
        last_error=info.last_error,
        tool_count=info.tool_count,
    )


def _tool(tool: ToolInfo) -> ToolOut:
    return ToolOut(
        name=tool.name,
        agent_name=tool.agent_name,
        description=tool.description,
        input_schema=tool.input_schema,
        read_only=tool.read_only,
    )


@router.get("/mcp/servers", response_model=ServerList)
async def list_servers(c: Container = Depends(container)) -> ServerList:
    return ServerList(servers=[_out(info) for info in await c.mcp_servers.all()])


@router.post("/mcp/servers", response_model=ServerOut, status_code=201)
async def create_server(body: ServerIn, c: Container = Depends(container)) -> ServerOut:
    config = ServerConfig(
        name=body.name,
        transport=body.transport,
        command=body.command,
        args=tuple(body.args),
        url=body.url,
        env=body.env,
        headers=body.headers,
        trusted=body.trusted,
        enabled=body.enabled,
    )
    return _out(await c.mcp_servers.create(config))


@router.get("/mcp/servers/{name}", response_model=ServerOut)
async def get_server(name: str, c: Container = Depends(container)) -> ServerOut:
    return _out(await c.mcp_servers.get(name))


@router.patch("/mcp/servers/{name}", response_model=ServerOut)
async def patch_server(
    name: str, body: ServerPatch, c: Container = Depends(container)
) -> ServerOut:
    body.require_some_change()
    change = Change(
        trusted=body.trusted,
        enabled=body.enabled,
        command=body.command,
        args=tuple(body.args) if body.args is not None else None,
        url=body.url,
        env=body.env,
        headers=body.headers,
    )
    return _out(await c.mcp_servers.update(name, change))


@router.delete("/mcp/servers/{name}", response_model=Status)
async def delete_server(name: str, c: Container = Depends(container)) -> Status:
    await c.mcp_servers.delete(name)
    return Status(status="deleted")


@router.get("/mcp/servers/{name}/tools", response_model=ToolList)
async def server_tools(name: str, c: Container = Depends(container)) -> ToolList:
    return ToolList(server=name, tools=[_tool(t) for t in await c.mcp_servers.tools(name)])
