"""The session endpoints: the ten of the spec, plus revert and branch."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Body, Depends, Query
from pydantic import BaseModel, Field

from famulus.api.deps import container
from famulus.api.schemas import MAX_ROW_ID, PlainName, RequestBody
from famulus.sessions.service import RECENT_LIMIT
from famulus.store.sessions import MessageRow, SessionRow
from famulus.wiring import Container

router = APIRouter(tags=["sessions"])


class SessionBrief(BaseModel):
    session_id: str
    name: str
    sources: list[str]


class SessionItem(SessionBrief):
    started_at: str
    last_activity: str
    message_count: int
    archived_at: str | None


class SessionList(BaseModel):
    sessions: list[SessionItem]


class SessionStatus(BaseModel):
    status: str
    session_id: str


class ToolCall(BaseModel):
    id: str
    name: str
    arguments: Any


class Message(BaseModel):
    id: int
    role: str
    content: str
    created_at: str
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    images: list[dict[str, Any]] | None = None


class History(BaseModel):
    session_id: str
    messages: list[Message]


class CreateSession(RequestBody):
    name: PlainName | None = None


class RenameSession(RequestBody):
    name: PlainName


class SessionRef(RequestBody):
    session_id: str | None = None


MAX_REVERT_TURNS = 1000


class RevertIn(RequestBody):
    turns: int = Field(
        default=1,
        ge=1,
        le=MAX_REVERT_TURNS,
        description="How many turns to remove from the end (a user message and all after it).",
    )


class RevertOut(BaseModel):
    status: str
    session_id: str
    turns: int
    removed: list[Message]
    text: str
    images: list[dict[str, Any]] | None = None


class BranchIn(RequestBody):
    message_id: int | None = Field(
        default=None,
        ge=1,
        le=MAX_ROW_ID,
        description="Copy the history up to and including this message (default: all of it).",
    )
    name: PlainName | None = None


Origin = Literal["chat", "automation", "all"]
ORIGIN_QUERY = Query(
    default="chat",
    description="Which sessions: a person's conversations (chat, the default), "
    "automations' own sessions (automation), or all.",
)


def _origin(origin: Origin) -> str | None:
    return None if origin == "all" else origin


def _item(row: SessionRow) -> SessionItem:
    return SessionItem(
        session_id=row.session_id,
        name=row.name,
        sources=row.sources,
        started_at=row.started_at,
        last_activity=row.last_activity,
        message_count=row.message_count,
        archived_at=row.archived_at,
    )


def _message(m: MessageRow) -> Message:
    return Message(
        id=m.id,
        role=m.role,
        content=m.content,
        created_at=m.created_at,
        tool_calls=[ToolCall(**tc) for tc in m.tool_calls] if m.tool_calls else None,
        tool_call_id=m.tool_call_id,
        images=m.images,
    )


@router.get("/session", response_model=SessionBrief)
async def current_session(
    session_id: str | None = Query(default=None), c: Container = Depends(container)
) -> SessionBrief:
    row = await c.sessions.current(session_id)
    return SessionBrief(session_id=row.session_id, name=row.name, sources=row.sources)


@router.get("/session/history", response_model=History, response_model_exclude_none=True)
async def session_history(
    session_id: str | None = Query(default=None), c: Container = Depends(container)
) -> History:
    row, messages = await c.sessions.history(session_id)
    return History(session_id=row.session_id, messages=[_message(m) for m in messages])


@router.post("/session/clear", response_model=SessionStatus)
async def clear_session(
    body: SessionRef | None = Body(default=None), c: Container = Depends(container)
) -> SessionStatus:
    row = await c.sessions.clear(body.session_id if body else None)
    return SessionStatus(status="cleared", session_id=row.session_id)


@router.post("/sessions", response_model=SessionItem, status_code=201)
async def create_session(
    body: CreateSession | None = Body(default=None), c: Container = Depends(container)
) -> SessionItem:
    return _item(await c.sessions.create(body.name if body else None))


@router.get("/sessions", response_model=SessionList)
async def list_sessions(
    limit: int = Query(default=RECENT_LIMIT, ge=1, le=RECENT_LIMIT),
    offset: int = Query(default=0, ge=0),
    origin: Origin = ORIGIN_QUERY,
    c: Container = Depends(container),
) -> SessionList:
    rows = await c.sessions.recent(limit=limit, offset=offset, origin=_origin(origin))
    return SessionList(sessions=[_item(r) for r in rows])


@router.get("/sessions/archived", response_model=SessionList)
async def archived_sessions(
    limit: int = Query(default=50, ge=1, le=200),
    offset: int = Query(default=0, ge=0),
    origin: Origin = ORIGIN_QUERY,
    c: Container = Depends(container),
) -> SessionList:
    rows = await c.sessions.archived(limit=limit, offset=offset, origin=_origin(origin))
    return SessionList(sessions=[_item(r) for r in rows])


@router.patch("/sessions/{session_id}", response_model=SessionItem)
async def rename_session(
    session_id: str, body: RenameSession, c: Container = Depends(container)
) -> SessionItem:
    return _item(await c.sessions.rename(session_id, body.name))


@router.delete("/sessions/{session_id}", response_model=SessionStatus)
async def archive_session(session_id: str, c: Container = Depends(container)) -> SessionStatus:
    await c.sessions.archive(session_id)
    return SessionStatus(status="archived", session_id=session_id)


@router.post("/sessions/{session_id}/restore", response_model=SessionStatus)
async def restore_session(session_id: str, c: Container = Depends(container)) -> SessionStatus:
    await c.sessions.restore(session_id)
    return SessionStatus(status="restored", session_id=session_id)


@router.delete("/sessions/{session_id}/permanent", response_model=SessionStatus)
async def delete_session(session_id: str, c: Container = Depends(container)) -> SessionStatus:
    await c.sessions.delete_permanently(session_id)
    return SessionStatus(status="deleted", session_id=session_id)


@router.post(
    "/sessions/{session_id}/revert",
    response_model=RevertOut,
    response_model_exclude_none=True,
    responses={
        409: {
            "description": "A run is active in the session, the session is archived, "
            "or it has no turn to revert."
        }
    },
)
async def revert_session(
    session_id: str, body: RevertIn | None = Body(default=None), c: Container = Depends(container)
) -> RevertOut:
    done = await c.sessions.revert(session_id, body.turns if body else 1)
    return RevertOut(
        status="reverted",
        session_id=session_id,
        turns=done.turns,
        removed=[_message(m) for m in done.removed],
        text=done.first.content,
        images=done.first.images,
    )


@router.post("/sessions/{session_id}/branch", response_model=SessionItem, status_code=201)
async def branch_session(
    session_id: str, body: BranchIn | None = Body(default=None), c: Container = Depends(container)
) -> SessionItem:
    row = await c.sessions.branch(
        session_id, body.message_id if body else None, body.name if body else None
    )
    return _item(row)
