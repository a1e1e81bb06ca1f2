"""The profile and dreams."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query
from pydantic import Field

from famulus.api.memory_common import Page, memory
from famulus.api.schemas import RequestBody, RowId
from famulus.errors import NotFound
from famulus.memory import profile
from famulus.memory.service import MemoryService

router = APIRouter(tags=["memory"])


class ProfileIn(RequestBody):
    kind: str = Field(min_length=1, max_length=40)
    summary: str = Field(min_length=1, max_length=2000)
    source_fact_ids: list[int] = Field(default_factory=list, max_length=200)
    source_observation_ids: list[int] = Field(default_factory=list, max_length=200)
    confidence: float = Field(default=0.8, ge=0.0, le=1.0)


class ProfilePatch(RequestBody):
    kind: str | None = Field(default=None, min_length=1, max_length=40)
    summary: str | None = Field(default=None, min_length=1, max_length=2000)
    source_fact_ids: list[int] | None = Field(default=None, max_length=200)
    source_observation_ids: list[int] | None = Field(default=None, max_length=200)
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)


@router.get("/memory/profile")
async def list_profile(
    archived: bool = Query(False, description="Include archived entries."),
    m: MemoryService = Depends(memory),
) -> dict[str, Any]:
    rows = await m.extra.list_profile(include_archived=archived)
    return {"entries": [profile.public_entry(r) for r in rows]}


@router.post("/memory/profile", status_code=201)
async def create_entry(body: ProfileIn, m: MemoryService = Depends(memory)) -> dict[str, Any]:
    row = await profile.create_entry(
        m,
        body.kind,
        body.summary,
        body.source_fact_ids,
        body.source_observation_ids,
        body.confidence,
    )
    return {"entry": profile.public_entry(row)}


@router.get("/memory/profile/{entry_id}")
async def get_entry(entry_id: RowId, m: MemoryService = Depends(memory)) -> dict[str, Any]:
    return await profile.entry_detail(m, entry_id)


@router.patch("/memory/profile/{entry_id}")
async def patch_entry(
    entry_id: RowId, body: ProfilePatch, m: MemoryService = Depends(memory)
) -> dict[str, Any]:
    body.require_some_change()
    fields = body.model_dump(exclude_none=True)
    row = await profile.update_entry(m, entry_id, **fields)
    return {"entry": profile.public_entry(row)}


@router.delete("/memory/profile/{entry_id}")
async def delete_entry(entry_id: RowId, m: MemoryService = Depends(memory)) -> dict[str, Any]:
    await profile.archive_entry(m, entry_id)
    return {"status": "archived", "entry_id": entry_id}


@router.get("/dreams")
async def list_dreams(page: Page = Depends(), m: MemoryService = Depends(memory)) -> dict[str, Any]:
    rows, total = await m.extra.list_dreams(page.limit, page.offset)
    return {"dreams": [profile.public_dream(r) for r in rows], "total": total}


@router.get("/dreams/{dream_id}")
async def get_dream(dream_id: RowId, m: MemoryService = Depends(memory)) -> dict[str, Any]:
    return await profile.dream_detail(m, dream_id)


@router.delete("/dreams/{dream_id}")
async def delete_dream(dream_id: RowId, m: MemoryService = Depends(memory)) -> dict[str, Any]:
    if not await m.extra.delete_dream(dream_id):
        raise NotFound(f"No dream with id {dream_id}.")
    return {"status": "deleted", "dream_id": dream_id}
