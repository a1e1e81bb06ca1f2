"""Shared pieces of the memory routers: the service dependency, paging, and the
fact and observation bodies several endpoints return."""

from __future__ import annotations

from typing import Any

from fastapi import Depends, Query
from pydantic import BaseModel, ConfigDict

from famulus.api.deps import container
from famulus.memory.service import MemoryService
from famulus.wiring import Container


def memory(c: Container = Depends(container)) -> MemoryService:
    service: MemoryService = c.memory.service
    return service


class Page:
    """``limit`` (default 50, max 200) and ``offset``, as every list endpoint takes."""

    def __init__(
        self,
        limit: int = Query(50, ge=1, le=200, description="At most 200."),
        offset: int = Query(0, ge=0),
    ) -> None:
        self.limit = limit
        self.offset = offset


class RowOut(BaseModel):
    """A body read from the memory area's frozen rows (attributes, not dicts);
    fields a row has but the body does not declare (a fact's salience) stay out."""

    model_config = ConfigDict(from_attributes=True)


class FactOut(RowOut):
    id: int
    text: str
    kind: str
    source_type: str
    source_ref: str | None
    created_at: str
    updated_at: str
    access_count: int
    last_accessed_at: str | None
    archived_at: str | None
    superseded_by: int | None
    provenance: dict[str, Any]
    said_at: str | None
    event_start: str | None
    event_end: str | None


class ObservationOut(RowOut):
    id: int
    summary: str
    evidence_count: int
    created_at: str
    updated_at: str
    archived_at: str | None
