"""GET /models/embedding, POST /config/embedding and the progress of a re-index,
GET /memory/events."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field

from famulus.api.deps import container
from famulus.api.feeds import feed_response
from famulus.api.memory_common import memory
from famulus.api.schemas import RequestBody
from famulus.memory import reindex
from famulus.memory.service import MemoryService
from famulus.wiring import Container

router = APIRouter(tags=["config"])


class EmbeddingIn(RequestBody):
    embedding_model: str = Field(min_length=1, max_length=200)


class EmbeddingModel(BaseModel):
    id: str
    provider: str
    dimensions: int
    available: bool


class EmbeddingModels(BaseModel):
    models: list[EmbeddingModel]
    current: str


class Reindexing(BaseModel):
    status: str
    embedding_model: str
    total: int


@router.get("/models/embedding")
async def list_models(m: MemoryService = Depends(memory)) -> EmbeddingModels:
    models = [
        EmbeddingModel(
            id=info.id, provider=info.provider, dimensions=info.dimensions, available=usable
        )
        for info, usable in await m.factory.available()
    ]
    return EmbeddingModels(models=models, current=m.current_embedding_model())


@router.post("/config/embedding", status_code=202)
async def set_model(body: EmbeddingIn, m: MemoryService = Depends(memory)) -> Reindexing:
    started = await reindex.start_reindex(m, body.embedding_model)
    return Reindexing(
        status="reindexing", embedding_model=started.embedding_model, total=started.total
    )


@router.get(
    "/memory/events",
    tags=["memory"],
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}, "description": "SSE stream"}},
)
async def memory_events(c: Container = Depends(container)) -> StreamingResponse:
    """Re-index and backfill progress as it happens; a run under way is told at once."""
    service: MemoryService = c.memory.service
    return feed_response(
        c.memory_events, c.settings.sse_ping_interval_s, lambda: reindex.in_progress(service)
    )
