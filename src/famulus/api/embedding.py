"""GET /models/embedding and POST /config/embedding."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field

from famulus.api.memory_common import memory
from famulus.api.schemas import RequestBody
from famulus.memory import reindex
from famulus.memory.service import MemoryService

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
