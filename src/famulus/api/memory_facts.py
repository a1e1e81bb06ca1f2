"""Facts and observations: HTTP in and out, rules in famulus.memory."""

from __future__ import annotations

from datetime import date, datetime

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, Field, field_validator

from famulus.api.memory_common import FactOut, ObservationOut, Page, RowOut, memory
from famulus.api.schemas import RequestBody, RowId
from famulus.memory import when
from famulus.memory.service import MemoryService

router = APIRouter(tags=["memory"])

_KIND = Field(default=None, min_length=1, max_length=40, pattern=r"^[a-z_][a-z0-9_-]*$")


MAX_IMPORT = 5000


class FactIn(RequestBody):
    text: str = Field(min_length=1, max_length=10_000)
    kind: str | None = _KIND
    said_at: str | None = Field(
        default=None,
        max_length=40,
        description="When it was said: an ISO date or date-time (a bare date is noon,"
        " a time without offset is wall-clock time, in the server's time zone). Default: now.",
    )

    @field_validator("said_at")
    @classmethod
    def _iso(cls, value: str | None) -> str | None:
        if value is not None:
            moment = _moment(value)  # ValueError: a 422 naming the field
            day = moment.date() if isinstance(moment, datetime) else moment
            if not when.FIRST_DAY < day < when.LAST_DAY:  # a day of slack for the zone
                raise ValueError(
                    f"said_at must be between the years {when.FIRST_DAY.year}"
                    f" and {when.LAST_DAY.year}"
                )
        return value

    def said(self, zone: str) -> datetime | None:
        return when.said_moment(_moment(self.said_at), zone) if self.said_at else None


def _moment(value: str) -> datetime | date:
    """An ISO date ("2023-05-08") or date-time ("2023-05-08T19:00:00Z")."""
    text = value.strip()
    if len(text) == 10:
        return date.fromisoformat(text)
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


class FactPatch(RequestBody):
    text: str | None = Field(default=None, min_length=1, max_length=10_000)
    kind: str | None = _KIND


class ObservationPatch(RequestBody):
    summary: str = Field(min_length=1, max_length=10_000)


class FactsImport(RequestBody):
    facts: list[FactIn] = Field(min_length=1, max_length=MAX_IMPORT)


class FactList(BaseModel):
    facts: list[FactOut]
    total: int


class FactBody(BaseModel):
    fact: FactOut


class Imported(BaseModel):
    imported: int
    skipped: int
    fact_ids: list[int]


class EntityOut(RowOut):
    id: int
    name: str
    type: str


class LinkedFactOut(RowOut):
    id: int
    text: str
    link_type: str
    weight: float


class FactDetailOut(RowOut):
    fact: FactOut
    entities: list[EntityOut]
    linked_facts: list[LinkedFactOut]


class FactDeleted(BaseModel):
    status: str
    fact_id: int


class ObservationList(BaseModel):
    observations: list[ObservationOut]
    total: int


class ObservationBody(BaseModel):
    observation: ObservationOut


class ObservationDetailOut(RowOut):
    observation: ObservationOut
    supporting_facts: list[FactOut]


class ObservationDeleted(BaseModel):
    status: str
    observation_id: int


@router.get("/facts")
async def list_facts(
    page: Page = Depends(),
    q: str | None = Query(None, max_length=1000, description="Full-text search."),
    kind: str | None = Query(None, max_length=40),
    source_type: str | None = Query(None, max_length=40),
    archived: bool = Query(False, description="List archived (superseded) facts instead."),
    m: MemoryService = Depends(memory),
) -> FactList:
    rows, total = await m.list_facts(
        limit=page.limit,
        offset=page.offset,
        q=q,
        kind=kind,
        source_type=source_type,
        archived=archived,
    )
    return FactList.model_validate({"facts": rows, "total": total})


@router.post("/facts", status_code=201)
async def create_fact(body: FactIn, m: MemoryService = Depends(memory)) -> FactBody:
    row = await m.add_fact(body.text, body.kind or "fact", "manual", said_at=body.said(m.zone))
    return FactBody.model_validate({"fact": row})


@router.post("/facts/import", status_code=201)
async def import_facts(body: FactsImport, m: MemoryService = Depends(memory)) -> Imported:
    rows, skipped = await m.import_facts(
        [(f.text, f.kind or "fact", f.said(m.zone)) for f in body.facts]
    )
    return Imported(imported=len(rows), skipped=skipped, fact_ids=[r.id for r in rows])


@router.get("/facts/{fact_id}")
async def get_fact(fact_id: RowId, m: MemoryService = Depends(memory)) -> FactDetailOut:
    return FactDetailOut.model_validate(await m.fact_detail(fact_id))


@router.patch("/facts/{fact_id}")
async def patch_fact(
    fact_id: RowId, body: FactPatch, m: MemoryService = Depends(memory)
) -> FactBody:
    body.require_some_change()
    row = await m.update_fact(fact_id, body.text, body.kind)
    return FactBody.model_validate({"fact": row})


@router.delete("/facts/{fact_id}")
async def delete_fact(fact_id: RowId, m: MemoryService = Depends(memory)) -> FactDeleted:
    await m.delete_fact(fact_id)
    return FactDeleted(status="deleted", fact_id=fact_id)


@router.get("/observations")
async def list_observations(
    page: Page = Depends(), m: MemoryService = Depends(memory)
) -> ObservationList:
    rows, total = await m.list_observations(page.limit, page.offset)
    return ObservationList.model_validate({"observations": rows, "total": total})


@router.get("/observations/{obs_id}")
async def get_observation(
    obs_id: RowId, m: MemoryService = Depends(memory)
) -> ObservationDetailOut:
    return ObservationDetailOut.model_validate(await m.observation_detail(obs_id))


@router.patch("/observations/{obs_id}")
async def patch_observation(
    obs_id: RowId, body: ObservationPatch, m: MemoryService = Depends(memory)
) -> ObservationBody:
    row = await m.update_observation(obs_id, body.summary)
    return ObservationBody.model_validate({"observation": row})


@router.delete("/observations/{obs_id}")
async def delete_observation(
    obs_id: RowId, m: MemoryService = Depends(memory)
) -> ObservationDeleted:
    await m.delete_observation(obs_id)
    return ObservationDeleted(status="deleted", observation_id=obs_id)
