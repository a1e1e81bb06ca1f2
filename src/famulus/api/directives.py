"""GET/PUT /directives."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field

from famulus.api.deps import container
from famulus.api.schemas import RequestBody
from famulus.directives import MAX_DIRECTIVES_CHARS
from famulus.wiring import Container

router = APIRouter(tags=["directives"])


class Directives(BaseModel):
    content: str


class DirectivesIn(RequestBody):
    content: str = Field(max_length=MAX_DIRECTIVES_CHARS)


@router.get("/directives", response_model=Directives)
async def get_directives(c: Container = Depends(container)) -> Directives:
    return Directives(content=await c.directives.get())


@router.put("/directives", response_model=Directives)
async def put_directives(body: DirectivesIn, c: Container = Depends(container)) -> Directives:
    return Directives(content=await c.directives.put(body.content))
