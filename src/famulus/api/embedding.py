"""GET /models/embedding and POST /config/embedding."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse
from pydantic import Field

from famulus.api.memory_common import memory
from famulus.api.schemas import RequestBody
from famulus.memory import reindex
from famulus.memory.service import MemoryService

router = APIRouter(tags=["config"])


class EmbeddingIn(RequestBody):
    embedding_model: str = Field(min_length=1, max_length=200)


@router.get("/models/embedding")
async def list_models(m: MemoryService = Depends(memory)) -> dict[str, Any]:
    models = [
        {
            "id": info.id,
            "provider": info.provider,
            "dimensions": info.dimensions,
            "available": usable,
        }
        for info, usable in await m.factory.available()
    ]
    return {"models": models, "current": m.current_embedding_model()}


@router.post("/config/embedding", status_code=202)
async def set_model(body: EmbeddingIn, m: MemoryService = Depends(memory)) -> JSONResponse:
    return JSONResponse(await reindex.start_reindex(m, body.embedding_model), status_code=202)
