"""GET /health: public liveness and version; confirms a token when one is sent."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
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
    # The key check may run scrypt (tens of ms): off the event loop, so wrong keys
    # sent to /health cannot slow every other request down.
    auth = await run_in_threadpool(token_is_valid, request)
    return Health(status="ok", version=__version__, auth=auth)
