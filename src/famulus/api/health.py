"""GET /health: public liveness and version; confirms a token when one is sent."""

from __future__ import annotations

from fastapi import APIRouter, Request
from pydantic import BaseModel

from famulus import __version__
from famulus.api.deps import token_is_valid

router = APIRouter(tags=["health"])


class Health(BaseModel):
    status: str
    version: str
    auth: bool | None = None


@router.get("/health", response_model=Health, response_model_exclude_none=True)
async def health(request: Request) -> Health:
    return Health(status="ok", version=__version__, auth=token_is_valid(request))
