"""Continual learning: events, proposals, candidate status."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel

from famulus.api.memory_common import Page, RowOut, memory
from famulus.api.schemas import RequestBody, RowId
from famulus.memory.learning import EVENT_KINDS, Learning
from famulus.memory.service import MemoryService

router = APIRouter(tags=["memory"])

Status = Literal["proposed", "approved", "applied", "rejected", "reverted"]


class StatusIn(RequestBody):
    status: Status


class CandidateOut(RowOut):
    """A candidate without ``applied_state`` (what a revert needs, kept inside)."""

    id: int
    status: str
    change_type: str
    target_key: str
    proposal: str
    rationale: str
    evidence_event_ids: list[int]
    created_at: str
    updated_at: str
    applied_at: str | None
    reverted_at: str | None


class Proposed(BaseModel):
    created_candidates: list[CandidateOut]
    skipped: int


class CandidateList(BaseModel):
    candidates: list[CandidateOut]
    total: int


class CandidateBody(BaseModel):
    candidate: CandidateOut


class EventOut(RowOut):
    id: int
    kind: str
    summary: str
    session_id: str | None
    run_id: str | None
    data: dict[str, Any]
    created_at: str


class EventList(BaseModel):
    events: list[EventOut]
    total: int


def learning(m: MemoryService = Depends(memory)) -> Learning:
    result: Learning = m.learning
    return result


@router.post("/memory/learning/propose")
async def propose(lrn: Learning = Depends(learning)) -> Proposed:
    result = await lrn.propose()
    return Proposed.model_validate(
        {"created_candidates": result.created, "skipped": result.skipped}
    )


@router.get("/memory/learning/candidates")
async def list_candidates(
    status: Status | None = Query(None),
    page: Page = Depends(),
    lrn: Learning = Depends(learning),
) -> CandidateList:
    rows, total = await lrn.candidates(status, page.limit, page.offset)
    return CandidateList.model_validate({"candidates": rows, "total": total})


@router.patch("/memory/learning/candidates/{cand_id}/status")
async def set_status(
    cand_id: RowId, body: StatusIn, lrn: Learning = Depends(learning)
) -> CandidateBody:
    row = await lrn.transition(cand_id, body.status)
    return CandidateBody.model_validate({"candidate": row})


@router.get("/memory/learning/events")
async def list_events(
    kind: Literal[EVENT_KINDS] | None = Query(None),  # type: ignore[valid-type]
    page: Page = Depends(),
    lrn: Learning = Depends(learning),
) -> EventList:
    rows, total = await lrn.events(page.limit, page.offset, kind)
    return EventList.model_validate({"events": rows, "total": total})
