"""Memory-wide endpoints: audit, recall inspection, stats, clear, on-demand upkeep."""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import Any

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, Field

from famulus.api.memory_common import FactOut, ObservationOut, RowOut, memory
from famulus.api.schemas import RequestBody
from famulus.memory import context
from famulus.memory.recall import LIMIT as RECALL_LIMIT
from famulus.memory.service import Audit, Drift, MemoryService
from famulus.memory.vectors import ReindexSnapshot

router = APIRouter(tags=["memory"])

# How many example ids the audit shows per finding.
EXAMPLE_IDS = 20


class InspectIn(RequestBody):
    query: str = Field(min_length=1, max_length=10_000)
    limit: int | None = Field(default=None, ge=1, le=50)


class ExtractIn(RequestBody):
    session_id: str = Field(min_length=1, max_length=200)


class DriftOut(BaseModel):
    """Counts of each finding, and up to 20 example ids (``<name>_ids``, only when non-zero)."""

    total: int
    without_embedding: int
    without_embedding_ids: list[int] | None = None
    stale_embedding: int
    stale_embedding_ids: list[int] | None = None
    orphan_embedding: int
    orphan_embedding_ids: list[int] | None = None
    fts_missing: int
    fts_missing_ids: list[int] | None = None
    fts_orphan: int
    fts_orphan_ids: list[int] | None = None
    fts_consistent: bool
    index_missing: int
    index_missing_ids: list[int] | None = None
    index_orphan: int
    index_orphan_ids: list[int] | None = None

    @classmethod
    def of(cls, drift: Drift) -> DriftOut:
        body: dict[str, Any] = {}
        for f in fields(drift):
            value = getattr(drift, f.name)
            if isinstance(value, list):
                body[f.name] = len(value)
                body[f"{f.name}_ids"] = value[:EXAMPLE_IDS] or None
            else:
                body[f.name] = value
        return cls.model_validate(body)


class ReindexOut(BaseModel):
    status: str
    done: int
    total: int
    embedding_model: str | None = None
    error: str | None = None

    @classmethod
    def of(cls, snap: ReindexSnapshot) -> ReindexOut:
        return cls(
            status=snap.status,
            done=snap.done,
            total=snap.total,
            embedding_model=snap.model,
            error=snap.error,
        )


class AuditOut(BaseModel):
    embedding_model: str
    facts: DriftOut
    observations: DriftOut
    orphan_links: int
    orphan_entity_links: int
    orphan_observation_links: int
    reindex: ReindexOut
    backfill: ReindexOut
    ok: bool

    @classmethod
    def of(cls, audit: Audit) -> AuditOut:
        return cls(
            embedding_model=audit.embedding_model,
            facts=DriftOut.of(audit.facts),
            observations=DriftOut.of(audit.observations),
            orphan_links=audit.orphan_links,
            orphan_entity_links=audit.orphan_entity_links,
            orphan_observation_links=audit.orphan_observation_links,
            reindex=ReindexOut.of(audit.reindex),
            backfill=ReindexOut.of(audit.backfill),
            ok=audit.ok,
        )


class InspectedFact(FactOut):
    score: float
    cosine: float | None
    fts_rank: int | None
    vector_rank: int | None
    injected: bool


class InspectedObservation(ObservationOut):
    score: float
    cosine: float | None
    injected: bool


class TimeRangeOut(BaseModel):
    """The period a recall query asked about (days, both included)."""

    start: str = Field(serialization_alias="from")
    end: str = Field(serialization_alias="to")
    text: str


class InspectOut(BaseModel):
    facts: list[InspectedFact]
    observations: list[InspectedObservation]
    formatted: str
    time_range: TimeRangeOut | None = None

    @classmethod
    def of(cls, found: context.Inspection) -> InspectOut:
        facts = [
            {
                **asdict(f.row),
                "score": round(f.hit.score, 6),
                "cosine": f.hit.cosine,
                "fts_rank": f.hit.fts_rank,
                "vector_rank": f.hit.vec_rank,
                "injected": f.injected,
            }
            for f in found.facts
        ]
        observations = [
            {
                **asdict(o.row),
                "score": round(o.hit.score, 6),
                "cosine": o.hit.cosine,
                "injected": o.injected,
            }
            for o in found.observations
        ]
        span = found.time_range
        return cls.model_validate(
            {
                "facts": facts,
                "observations": observations,
                "formatted": found.formatted,
                "time_range": span
                and {
                    "start": span.start.isoformat(),
                    "end": span.end.isoformat(),
                    "text": span.text,
                },
            }
        )


class AccessEventOut(RowOut):
    id: int
    session_id: str | None
    query: str
    owner_type: str
    owner_id: int
    action: str
    score: float | None
    created_at: str


class AccessEvents(BaseModel):
    events: list[AccessEventOut]


class StatsOut(RowOut):
    fact_count: int
    observation_count: int
    profile_count: int
    dream_count: int


class DeletedCounts(RowOut):
    facts: int
    observations: int
    profile: int
    dreams: int
    learning_events: int
    learning_candidates: int
    entities: int
    links: int
    vectors: int
    access_events: int


class ClearedOut(BaseModel):
    status: str
    deleted: DeletedCounts


class Extracted(BaseModel):
    status: str
    created: list[int]
    merged: list[int]
    superseded: list[int]


class Maintained(BaseModel):
    status: str
    observations: list[int]
    profile: list[int]
    dreams: list[int]


@router.get("/memory/audit", response_model_exclude_none=True)
async def audit(m: MemoryService = Depends(memory)) -> AuditOut:
    return AuditOut.of(await m.audit())


@router.post("/memory/recall/inspect")
async def inspect(body: InspectIn, m: MemoryService = Depends(memory)) -> InspectOut:
    return InspectOut.of(await context.inspect(m, body.query, body.limit or RECALL_LIMIT))


@router.get("/memory/access")
async def access_events(
    limit: int = Query(50, ge=1, le=200), m: MemoryService = Depends(memory)
) -> AccessEvents:
    return AccessEvents.model_validate({"events": await m.access_events(limit)})


@router.get("/stats")
async def stats(m: MemoryService = Depends(memory)) -> StatsOut:
    return StatsOut.model_validate(await m.stats())


@router.post("/memory/clear")
async def clear(m: MemoryService = Depends(memory)) -> ClearedOut:
    return ClearedOut.model_validate({"status": "cleared", "deleted": await m.clear()})


@router.post("/memory/extract")
async def extract(body: ExtractIn, m: MemoryService = Depends(memory)) -> Extracted:
    """Extract facts from a session now instead of waiting for it to go quiet."""
    return Extracted.model_validate(
        {"status": "extracted", **await m.jobs.extract_now(body.session_id)}
    )


@router.post("/memory/maintain")
async def maintain(m: MemoryService = Depends(memory)) -> Maintained:
    """Consolidate facts into observations, update the profile, and dream (if on)."""
    return Maintained.model_validate({"status": "done", **await m.jobs.maintain()})
