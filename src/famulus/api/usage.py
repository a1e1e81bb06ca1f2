"""GET /usage: spend and tokens over a time range, grouped."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Depends, Query
from pydantic import Field

from famulus.api.deps import container
from famulus.api.schemas import ServiceBody
from famulus.usage.service import UsageService
from famulus.wiring import Container

router = APIRouter(tags=["usage"])


def service(c: Container = Depends(container)) -> UsageService:
    return c.usage


class UsageTotals(ServiceBody):
    """``cost`` in USD sums the requests whose price is known; null when none was."""

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cost: float | None
    calls: int


class UsageGroup(UsageTotals):
    """``key``: the day, ``provider:model``, source, session id or automation id
    (null for requests outside any session or automation); ``label`` the
    session's or automation's name while it exists."""

    key: str | None
    label: str | None


class UsageOut(ServiceBody):
    from_: str = Field(serialization_alias="from")
    to: str
    group_by: str
    total: UsageTotals
    groups: list[UsageGroup]


@router.get("/usage", response_model=UsageOut)
async def get_usage(
    from_: str | None = Query(default=None, alias="from", max_length=40),
    to: str | None = Query(default=None, max_length=40),
    group_by: Literal["day", "model", "source", "session", "automation"] = "day",
    svc: UsageService = Depends(service),
) -> UsageOut:
    body = await svc.report(from_, to, group_by)
    body["from_"] = body.pop("from")
    return UsageOut.model_validate(body)
