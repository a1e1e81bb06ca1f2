"""/services: the web search key (Exa) and the Telegram bot token."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field

from famulus.api.deps import container
from famulus.api.schemas import RequestBody
from famulus.llm.external import ExternalServices
from famulus.wiring import Container

router = APIRouter(tags=["services"])


def services(c: Container = Depends(container)) -> ExternalServices:
    return c.llm.services


class ServiceItem(BaseModel):
    id: str
    name: str
    connected: bool
    key_hint: str | None
    from_env: bool


class ServiceList(BaseModel):
    services: list[ServiceItem]


class ServiceConnectIn(RequestBody):
    api_key: str = Field(min_length=1, max_length=4096)


class ServiceStatus(BaseModel):
    status: str
    service: str


@router.get("/services", response_model=ServiceList)
async def list_services(s: ExternalServices = Depends(services)) -> Any:
    return {"services": s.list_all()}


@router.post("/services/{service}/connect", response_model=ServiceStatus)
async def connect_service(
    service: str, body: ServiceConnectIn, s: ExternalServices = Depends(services)
) -> Any:
    await s.connect(service, body.api_key)
    return {"status": "connected", "service": service}


@router.delete("/services/{service}", response_model=ServiceStatus)
async def disconnect_service(service: str, s: ExternalServices = Depends(services)) -> Any:
    s.disconnect(service)
    return {"status": "disconnected", "service": service}
