"""GET/PATCH /config and GET /models (the embedding endpoints belong to memory).

``ConfigService`` builds the bodies; the response models here only declare
them, so the OpenAPI document says what a client gets. Every key the service
returns is declared, so validation drops nothing.
"""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Depends
from pydantic import Field

from famulus.api.deps import container
from famulus.api.schemas import RequestBody, ServiceBody
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
    default_notifier: str | None = Field(default=None, min_length=1, max_length=64)
    # USD caps on model spend; null removes the cap (see docs/api.md, Usage).
    budget_daily: float | None = Field(default=None, gt=0)
    budget_monthly: float | None = Field(default=None, gt=0)


class AccountState(ServiceBody):
    """The mail and calendar account: switched on, and also configured."""

    enabled: bool
    connected: bool


class MemoryState(ServiceBody):
    enabled: bool
    connected: bool
    dreams: bool


class WebState(ServiceBody):
    """``mode`` as chosen (auto, exa, ddgs, none); ``provider`` the backend in use."""

    connected: bool
    mode: str
    provider: str


class Integrations(ServiceBody):
    account: AccountState
    memory: MemoryState
    web: WebState


class ConfigOut(ServiceBody):
    """The role models (``provider:model`` or a bare id; null when unset)."""

    chat_model: str | None
    research_model: str | None
    memory_model: str | None
    embedding_model: str | None
    default_notifier: str | None  # a notifier name; the agent's schedule tool uses it
    budget_daily: float | None
    budget_monthly: float | None
    integrations: Integrations


class ModelOut(ServiceBody):
    id: str
    context_window: int
    max_output_tokens: int
    vision: bool
    input_price_per_mtok: float | None
    output_price_per_mtok: float | None


class ModelGroup(ServiceBody):
    provider: str
    models: list[ModelOut]


class ModelsOut(ServiceBody):
    """What each connected provider offers, in lookup order, and the role models."""

    groups: list[ModelGroup]
    chat_model: str | None
    research_model: str | None
    memory_model: str | None


@router.get("/config")
async def get_config(svc: ConfigService = Depends(config_service)) -> ConfigOut:
    return ConfigOut.model_validate(await svc.get())


@router.patch("/config")
async def patch_config(
    body: ConfigPatch, svc: ConfigService = Depends(config_service)
) -> ConfigOut:
    return ConfigOut.model_validate(await svc.patch(body.model_dump(exclude_unset=True)))


@router.get("/models")
async def list_models(svc: ConfigService = Depends(config_service)) -> ModelsOut:
    return ModelsOut.model_validate(await svc.models())
