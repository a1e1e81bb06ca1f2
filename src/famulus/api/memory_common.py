"""Shared pieces of the memory routers: the service dependency and paging."""

from __future__ import annotations

from fastapi import Depends, Query

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
