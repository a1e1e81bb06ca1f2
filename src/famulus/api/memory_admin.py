"""Memory-wide endpoints: audit, recall inspection, stats, clear, on-demand upkeep."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query
from pydantic import Field

from famulus.api.memory_common import memory
from famulus.api.schemas import RequestBody
from famulus.memory import context
from famulus.memory.service import MemoryService

router = APIRouter(tags=["memory"])


class InspectIn(RequestBody):
    query: str = Field(min_length=1, max_length=10_000)
    limit: int | None = Field(default=None, ge=1, le=50)


class ExtractIn(RequestBody):
    session_id: str = Field(min_length=1, max_length=200)


@router.get("/memory/audit")
async def audit(m: MemoryService = Depends(memory)) -> dict[str, Any]:
    return await m.audit()


@router.post("/memory/recall/inspect")
async def inspect(body: InspectIn, m: MemoryService = Depends(memory)) -> dict[str, Any]:
    return await context.inspect(m, body.query, body.limit or 8)


@router.get("/memory/access")
async def access_events(
    limit: int = Query(50, ge=1, le=200), m: MemoryService = Depends(memory)
) -> dict[str, Any]:
    return {"events": await m.extra.access_events(limit)}


@router.get("/stats")
async def stats(m: MemoryService = Depends(memory)) -> dict[str, int]:
    return await m.stats()


@router.post("/memory/clear")
async def clear(m: MemoryService = Depends(memory)) -> dict[str, Any]:
    return {"status": "cleared", "deleted": await m.clear()}


@router.post("/memory/extract")
async def extract(body: ExtractIn, m: MemoryService = Depends(memory)) -> dict[str, Any]:
    """Extract facts from a session now instead of waiting for it to go quiet."""
    from famulus.errors import NotFound

    if await m.jobs.sessions.store.get(body.session_id) is None:
        raise NotFound(f"No session with id {body.session_id}.")
    return {"status": "extracted", **await m.jobs.extract_session(body.session_id)}


@router.post("/memory/maintain")
async def maintain(m: MemoryService = Depends(memory)) -> dict[str, Any]:
    """Consolidate facts into observations, update the profile, and dream (if on)."""
    return {"status": "done", **await m.jobs.maintain()}
