"""The profile and dreams."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, Field

from famulus.api.memory_common import FactOut, ObservationOut, Page, RowOut, memory
from famulus.api.schemas import RequestBody, RowId
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


class EntryOut(RowOut):
    id: int
    kind: str
    summary: str
    source_fact_ids: list[int]
    source_observation_ids: list[int]
    confidence: float
    created_at: str
    updated_at: str
    archived_at: str | None


class EntryList(BaseModel):
    entries: list[EntryOut]


class EntryBody(BaseModel):
    entry: EntryOut


class EntryDetailOut(RowOut):
    entry: EntryOut
    source_facts: list[FactOut]
    source_observations: list[ObservationOut]


class EntryArchived(BaseModel):
    status: str
    entry_id: int


class DreamOut(RowOut):
    id: int
    bridge: str
    insight: str
    source_fact_ids: list[int]
    created_at: str


class DreamList(BaseModel):
    dreams: list[DreamOut]
    total: int


class DreamDetailOut(RowOut):
    dream: DreamOut
    source_facts: list[FactOut]


class DreamDeleted(BaseModel):
    status: str
    dream_id: int


@router.get("/memory/profile")
async def list_profile(
    archived: bool = Query(False, description="Include archived entries."),
    m: MemoryService = Depends(memory),
) -> EntryList:
    rows = await profile.list_entries(m, include_archived=archived)
    return EntryList.model_validate({"entries": rows})


@router.post("/memory/profile", status_code=201)
async def create_entry(body: ProfileIn, m: MemoryService = Depends(memory)) -> EntryBody:
    row = await profile.create_entry(
        m,
        body.kind,
        body.summary,
        body.source_fact_ids,
        body.source_observation_ids,
        body.confidence,
    )
    return EntryBody.model_validate({"entry": row})


@router.get("/memory/profile/{entry_id}")
async def get_entry(entry_id: RowId, m: MemoryService = Depends(memory)) -> EntryDetailOut:
    return EntryDetailOut.model_validate(await profile.entry_detail(m, entry_id))


@router.patch("/memory/profile/{entry_id}")
async def patch_entry(
    entry_id: RowId, body: ProfilePatch, m: MemoryService = Depends(memory)
) -> EntryBody:
    body.require_some_change()
    row = await profile.update_entry(
        m,
        entry_id,
        kind=body.kind,
        summary=body.summary,
        source_fact_ids=body.source_fact_ids,
        source_observation_ids=body.source_observation_ids,
        confidence=body.confidence,
    )
    return EntryBody.model_validate({"entry": row})


@router.delete("/memory/profile/{entry_id}")
async def delete_entry(entry_id: RowId, m: MemoryService = Depends(memory)) -> EntryArchived:
    await profile.archive_entry(m, entry_id)
    return EntryArchived(status="archived", entry_id=entry_id)


@router.get("/dreams")
async def list_dreams(page: Page = Depends(), m: MemoryService = Depends(memory)) -> DreamList:
    rows, total = await profile.list_dreams(m, page.limit, page.offset)
    return DreamList.model_validate({"dreams": rows, "total": total})


@router.get("/dreams/{dream_id}")
async def get_dream(dream_id: RowId, m: MemoryService = Depends(memory)) -> DreamDetailOut:
    return DreamDetailOut.model_validate(await profile.dream_detail(m, dream_id))


@router.delete("/dreams/{dream_id}")
async def delete_dream(dream_id: RowId, m: MemoryService = Depends(memory)) -> DreamDeleted:
    await profile.delete_dream(m, dream_id)
    return DreamDeleted(status="deleted", dream_id=dream_id)
