"""Notifier types and configs."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel

from famulus.api.deps import container
from famulus.api.schemas import RequestBody, ShortPlainName
from famulus.notify.types import describe_types
from famulus.store.notifiers import NotifierRow
from famulus.wiring import Container

router = APIRouter(tags=["notifiers"])


class NotifierIn(RequestBody):
    name: ShortPlainName
    type: str
    config: dict[str, Any]


class NotifierPatch(RequestBody):
    """Leave out what stays; ``config`` fields are merged into the current ones."""

    type: str | None = None
    config: dict[str, Any] | None = None


class NotifierOut(BaseModel):
    name: str
    type: str
    config: dict[str, Any]
    created_at: str


class NotifierList(BaseModel):
    configs: list[NotifierOut]


class TypeInfo(BaseModel):
    fields: list[str]


class Types(BaseModel):
    types: dict[str, TypeInfo]


class Status(BaseModel):
    status: str


def _out(row: NotifierRow) -> NotifierOut:
    return NotifierOut(name=row.name, type=row.type, config=row.config, created_at=row.created_at)


@router.get("/notifiers/types", response_model=Types)
async def notifier_types() -> Types:
    return Types(types={k: TypeInfo(**v) for k, v in describe_types().items()})


@router.get("/notifiers/configs", response_model=NotifierList)
async def list_configs(c: Container = Depends(container)) -> NotifierList:
    return NotifierList(configs=[_out(r) for r in await c.notifiers.all()])


@router.post("/notifiers/configs", response_model=NotifierOut, status_code=201)
async def create_config(body: NotifierIn, c: Container = Depends(container)) -> NotifierOut:
    return _out(await c.notifiers.create(body.name, body.type, body.config))


@router.patch("/notifiers/configs/{name}", response_model=NotifierOut)
async def patch_config(
    name: str, body: NotifierPatch, c: Container = Depends(container)
) -> NotifierOut:
    body.require_some_change()
    return _out(await c.notifiers.update(name, body.type, body.config))


@router.post("/notifiers/configs/{name}/test", response_model=Status)
async def test_config(name: str, c: Container = Depends(container)) -> Status:
    await c.notifiers.test(name)
    return Status(status="sent")


@router.delete("/notifiers/configs/{name}", response_model=Status)
async def delete_config(name: str, c: Container = Depends(container)) -> Status:
    await c.notifiers.delete(name)
    return Status(status="deleted")
