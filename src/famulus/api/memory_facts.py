"""Facts and observations: HTTP in and out, rules in famulus.memory."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query
from fastapi.responses import JSONResponse
from pydantic import Field

from famulus.api.memory_common import Page, memory
from famulus.api.schemas import RequestBody, RowId
from famulus.memory.service import MemoryService

router = APIRouter(tags=["memory"])

_KIND = Field(default=None, min_length=1, max_length=40, pattern=r"^[a-z_][a-z0-9_-]*$")


MAX_IMPORT = 5000


class FactIn(RequestBody):
    text: str = Field(min_length=1, max_length=10_000)
    kind: str | None = _KIND


class FactPatch(RequestBody):
    text: str | None = Field(default=None, min_length=1, max_length=10_000)
    kind: str | None = _KIND


class ObservationPatch(RequestBody):
    summary: str = Field(min_length=1, max_length=10_000)


@router.get("/facts")
async def list_facts(
    page: Page = Depends(),
    q: str | None = Query(None, max_length=1000, description="Full-text search."),
    kind: str | None = Query(None, max_length=40),
    source_type: str | None = Query(None, max_length=40),
    archived: bool = Query(False, description="List archived (superseded) facts instead."),
    m: MemoryService = Depends(memory),
) -> dict[str, Any]:
    rows, total = await m.store.list_facts(
        limit=page.limit,
        offset=page.offset,
        q=q,
        kind=kind,
        source_type=source_type,
        archived=archived,
    )
    return {"facts": [r.public() for r in rows], "total": total}


@router.post("/facts", status_code=201)
async def create_fact(body: FactIn, m: MemoryService = Depends(memory)) -> dict[str, Any]:
    row = await m.add_fact(body.text, body.kind or "fact", "manual")
    return {"fact": row.public()}


class FactsImport(RequestBody):
    facts: list[FactIn] = Field(min_length=1, max_length=MAX_IMPORT)


@router.post("/facts/import", status_code=201)
async def import_facts(body: FactsImport, m: MemoryService = Depends(memory)) -> dict[str, Any]:
    rows, skipped = await m.import_facts([(f.text, f.kind or "fact") for f in body.facts])
    return {"imported": len(rows), "skipped": skipped, "fact_ids": [r.id for r in rows]}


@router.get("/facts/{fact_id}")
async def get_fact(fact_id: RowId, m: MemoryService = Depends(memory)) -> dict[str, Any]:
    return await m.fact_detail(fact_id)


@router.patch("/facts/{fact_id}")
async def patch_fact(
    fact_id: RowId, body: FactPatch, m: MemoryService = Depends(memory)
) -> dict[str, Any]:
    body.require_some_change()
    row = await m.update_fact(fact_id, body.text, body.kind)
    return {"fact": row.public()}


@router.delete("/facts/{fact_id}")
async def delete_fact(fact_id: RowId, m: MemoryService = Depends(memory)) -> dict[str, Any]:
    await m.delete_fact(fact_id)
    return {"status": "deleted", "fact_id": fact_id}


@router.get("/observations")
async def list_observations(
    page: Page = Depends(), m: MemoryService = Depends(memory)
) -> dict[str, Any]:
    rows, total = await m.store.list_observations(page.limit, page.offset)
    return {"observations": [r.public() for r in rows], "total": total}


@router.get("/observations/{obs_id}")
async def get_observation(obs_id: RowId, m: MemoryService = Depends(memory)) -> dict[str, Any]:
    row = await m.get_observation(obs_id)
    facts = await m.store.supporting_facts(obs_id)
    return {"observation": row.public(), "supporting_facts": [f.public() for f in facts]}


@router.patch("/observations/{obs_id}")
async def patch_observation(
    obs_id: RowId, body: ObservationPatch, m: MemoryService = Depends(memory)
) -> dict[str, Any]:
    row = await m.update_observation(obs_id, body.summary)
    return {"observation": row.public()}


@router.delete("/observations/{obs_id}")
async def delete_observation(obs_id: RowId, m: MemoryService = Depends(memory)) -> JSONResponse:
    await m.delete_observation(obs_id)
    return JSONResponse({"status": "deleted", "observation_id": obs_id})
