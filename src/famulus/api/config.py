"""GET/PATCH /config and GET /models (the embedding endpoints belong to memory)."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Depends
from pydantic import Field

from famulus.api.deps import container
from famulus.api.schemas import RequestBody
from famulus.llm.config import ConfigService
from famulus.wiring import Container

router = APIRouter(tags=["config"])


def config_service(c: Container = Depends(container)) -> ConfigService:
    return c.llm_config


class ConfigPatch(RequestBody):
    chat_model: str | None = Field(default=None, min_length=1, max_length=300)
    research_model: str | None = Field(default=None, min_length=1, max_length=300)
    memory_model: str | None = Field(default=None, min_length=1, max_length=300)
    web_search: Literal["auto", "exa", "ddgs", "none"] | None = None
    memory_enabled: bool | None = None
    dreams_enabled: bool | None = None
    account_enabled: bool | None = None


@router.get("/config")
async def get_config(svc: ConfigService = Depends(config_service)) -> dict[str, Any]:
    return await svc.get()


@router.patch("/config")
async def patch_config(
    body: ConfigPatch, svc: ConfigService = Depends(config_service)
) -> dict[str, Any]:
    return await svc.patch(body.model_dump(exclude_unset=True))


@router.get("/models")
async def list_models(svc: ConfigService = Depends(config_service)) -> dict[str, Any]:
    return await svc.models()
