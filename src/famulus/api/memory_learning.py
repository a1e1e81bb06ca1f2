"""Continual learning: events, proposals, candidate status."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Depends, Query

from famulus.api.memory_common import Page, memory
from famulus.api.schemas import RequestBody, RowId
from famulus.memory.learning import EVENT_KINDS, Learning, public_candidate
from famulus.memory.service import MemoryService

router = APIRouter(tags=["memory"])

Status = Literal["proposed", "approved", "applied", "rejected", "reverted"]


class StatusIn(RequestBody):
    status: Status


def learning(m: MemoryService = Depends(memory)) -> Learning:
    result: Learning = m.learning
    return result


@router.post("/memory/learning/propose")
async def propose(lrn: Learning = Depends(learning)) -> dict[str, Any]:
    return await lrn.propose()


@router.get("/memory/learning/candidates")
async def list_candidates(
    status: Status | None = Query(None),
    page: Page = Depends(),
    m: MemoryService = Depends(memory),
) -> dict[str, Any]:
    rows, total = await m.extra.list_candidates(status, page.limit, page.offset)
    return {"candidates": [public_candidate(r) for r in rows], "total": total}


@router.patch("/memory/learning/candidates/{cand_id}/status")
async def set_status(
    cand_id: RowId, body: StatusIn, lrn: Learning = Depends(learning)
) -> dict[str, Any]:
    row = await lrn.transition(cand_id, body.status)
    return {"candidate": public_candidate(row)}


@router.get("/memory/learning/events")
async def list_events(
    kind: Literal[EVENT_KINDS] | None = Query(None),  # type: ignore[valid-type]
    page: Page = Depends(),
    m: MemoryService = Depends(memory),
) -> dict[str, Any]:
    rows, total = await m.extra.list_events(page.limit, page.offset, kind)
    return {"events": rows, "total": total}
