"""/providers (connect, disconnect, the openai-codex sign-in) and /models/custom."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field

from famulus.api.deps import container
from famulus.api.schemas import RequestBody
from famulus.llm.custom import CustomModelSpec
from famulus.llm.providers import ProviderAdmin
from famulus.wiring import Container

router = APIRouter(tags=["providers"])


def admin(c: Container = Depends(container)) -> ProviderAdmin:
    return c.llm_admin


class ProviderItem(BaseModel):
    id: str
    name: str
    auth_type: str
    connected: bool
    key_hint: str | None
    from_env: bool
    models: list[str]


class ProviderList(BaseModel):
    providers: list[ProviderItem]


class ConnectIn(RequestBody):
    api_key: str = Field(min_length=1, max_length=4096)
    chat_model: str | None = Field(default=None, min_length=1, max_length=300)


class ProviderStatus(BaseModel):
    status: str
    provider: str


class OAuthStart(BaseModel):
    status: str
    url: str
    expires_at: str


class OAuthStatus(BaseModel):
    status: str
    connected: bool
    error: str | None = None


# The body of POST /models/custom: the llm area's fields, strict as every body.
# (No docstring: it would become the schema's description in the OpenAPI document.)
class CustomModelIn(CustomModelSpec, RequestBody):
    pass


class CustomModelStatus(BaseModel):
    status: str
    model_id: str


@router.get("/providers", response_model=ProviderList)
async def list_providers(a: ProviderAdmin = Depends(admin)) -> Any:
    return {"providers": await a.list_all()}


@router.post("/providers/{provider}/connect", response_model=ProviderStatus)
async def connect(provider: str, body: ConnectIn, a: ProviderAdmin = Depends(admin)) -> Any:
    await a.connect(provider, body.api_key, body.chat_model)
    return {"status": "connected", "provider": provider}


@router.delete("/providers/{provider}", response_model=ProviderStatus)
async def disconnect(provider: str, a: ProviderAdmin = Depends(admin)) -> Any:
    await a.disconnect(provider)
    return {"status": "disconnected", "provider": provider}


@router.post("/providers/openai-codex/oauth/browser/start", response_model=OAuthStart)
async def oauth_start(a: ProviderAdmin = Depends(admin)) -> Any:
    return await a.llm.oauth.start()


@router.get(
    "/providers/openai-codex/oauth/status",
    response_model=OAuthStatus,
    response_model_exclude_none=True,
)
async def oauth_status(a: ProviderAdmin = Depends(admin)) -> Any:
    return a.llm.oauth.status()


@router.post("/models/custom", status_code=201, response_model=CustomModelStatus)
async def add_custom(body: CustomModelIn, a: ProviderAdmin = Depends(admin)) -> Any:
    await a.add_custom(body)
    return {"status": "added", "model_id": body.model_id}


@router.delete("/models/custom/{model_id:path}", response_model=CustomModelStatus)
async def remove_custom(model_id: str, a: ProviderAdmin = Depends(admin)) -> Any:
    await a.remove_custom(model_id)
    return {"status": "removed", "model_id": model_id}
