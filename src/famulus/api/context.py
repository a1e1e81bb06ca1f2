"""GET /context (token accounting) and POST /compact."""

from __future__ import annotations

from fastapi import APIRouter, Body, Depends, Query
from pydantic import BaseModel

from famulus.api.deps import container
from famulus.api.schemas import RequestBody
from famulus.chat.context import ContextService
from famulus.wiring import Container

router = APIRouter(tags=["context"])


def service(c: Container = Depends(container)) -> ContextService:
    return c.context


class ContextOut(BaseModel):
    model: str | None
    limit: int | None
    total: int
    message_count: int
    tool_count: int


class CompactIn(RequestBody):
    session_id: str | None = None


class CompactOut(BaseModel):
    status: str
    message: str
    before_tokens: int
    after_tokens: int


@router.get("/context", response_model=ContextOut)
async def get_context(
    session_id: str | None = Query(default=None), s: ContextService = Depends(service)
) -> ContextOut:
    r = await s.report(session_id)
    return ContextOut(
        model=r.model,
        limit=r.limit,
        total=r.total,
        message_count=r.message_count,
        tool_count=r.tool_count,
    )


@router.post("/compact", response_model=CompactOut)
async def post_compact(
    body: CompactIn | None = Body(default=None), s: ContextService = Depends(service)
) -> CompactOut:
    r = await s.compact(body.session_id if body else None)
    return CompactOut(
        status=r.status,
        message=r.message,
        before_tokens=r.before_tokens,
        after_tokens=r.after_tokens,
    )
