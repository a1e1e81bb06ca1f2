"""Automations: CRUD, toggles, run now, and the automation event stream."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Depends
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field

from famulus.api.deps import container
from famulus.api.feeds import feed_response
from famulus.api.memory_common import Page
from famulus.api.schemas import PlainName, RequestBody, RowId
from famulus.automations.service import AutomationService
from famulus.store.automations import AutomationRow, AutomationRunRow
from famulus.store.deliveries import DeliveryRow
from famulus.wiring import Container

router = APIRouter(tags=["automations"])


class AutomationIn(RequestBody):
    name: PlainName
    description: str = Field(min_length=1, max_length=20_000)
    trigger: dict[str, Any]
    notifiers: list[str] = Field(default_factory=list, max_length=20)
    writable: bool = False
    enabled: bool = True
    kind: Literal["task", "reminder"] = "task"
    budget: float | None = Field(default=None, gt=0)  # USD a day; null: no own cap


class AutomationPatch(RequestBody):
    name: PlainName | None = None
    description: str | None = Field(default=None, min_length=1, max_length=20_000)
    trigger: dict[str, Any] | None = None
    notifiers: list[str] | None = Field(default=None, max_length=20)
    writable: bool | None = None
    enabled: bool | None = None
    kind: Literal["task", "reminder"] | None = None
    budget: float | None = Field(default=None, gt=0)  # null removes the cap


class Automation(BaseModel):
    id: int
    name: str
    kind: str  # task | reminder
    description: str
    trigger: dict[str, Any]
    notifiers: list[str]
    enabled: bool
    writable: bool
    budget: float | None
    created_at: str
    updated_at: str
    last_run_at: str | None
    next_run_at: str | None
    last_result: str | None
    last_status: str | None
    running: bool


class DeliveryTry(BaseModel):
    attempt: int
    at: str
    status: str  # ok | error
    error: str | None = None


class Delivery(BaseModel):
    notifier: str
    status: str  # pending | retrying | delivered | failed
    attempts: int
    next_attempt_at: str | None
    last_error: str | None
    finished_at: str | None
    tries: list[DeliveryTry]


class AutomationRun(BaseModel):
    id: int
    started_at: str
    finished_at: str | None
    status: str
    result: str | None
    deliveries: list[Delivery]


class RunUsage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    cache_read_tokens: int
    cost: float


class RunRecord(AutomationRun):
    """One run in the run history: what started it, where it ran, what it cost."""

    fired_by: str | None  # schedule | catch_up | calendar | manual; null before issue 11
    session_id: str | None
    usage: RunUsage | None


class RunHistory(BaseModel):
    runs: list[RunRecord]
    total: int


class AutomationDetail(Automation):
    session_id: str | None
    runs: list[AutomationRun]


class AutomationList(BaseModel):
    automations: list[Automation]


class Enabled(BaseModel):
    id: int
    enabled: bool


class Writable(BaseModel):
    id: int
    writable: bool


class Started(BaseModel):
    status: str
    run_id: int


class Deleted(BaseModel):
    status: str
    id: int


def _svc(c: Container) -> AutomationService:
    service: AutomationService = c.automations
    return service


def _shown(row: object, body: type[BaseModel]) -> dict[str, Any]:
    """The attributes of ``row`` that ``body`` declares; the row's other
    columns (the automation's session, when it became active) stay inside."""
    return {name: getattr(row, name) for name in body.model_fields if hasattr(row, name)}


def _automation(row: AutomationRow, svc: AutomationService) -> Automation:
    return Automation(**_shown(row, Automation), running=svc.is_running(row.id))


def _run(run: AutomationRunRow, deliveries: list[DeliveryRow]) -> AutomationRun:
    shown = [Delivery(**_shown(d, Delivery)) for d in deliveries]
    return AutomationRun(**_shown(run, AutomationRun), deliveries=shown)


@router.post("/automations", status_code=201)
async def create(body: AutomationIn, c: Container = Depends(container)) -> Automation:
    svc = _svc(c)
    return _automation(await svc.create(body.model_dump()), svc)


@router.get("/automations")
async def list_all(c: Container = Depends(container)) -> AutomationList:
    svc = _svc(c)
    return AutomationList(automations=[_automation(r, svc) for r in await svc.all()])


@router.get(
    "/automations/events",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}, "description": "SSE stream"}},
)
async def events(c: Container = Depends(container)) -> StreamingResponse:
    return feed_response(_svc(c).feed, c.settings.sse_ping_interval_s)


@router.get("/automations/{automation_id}")
async def get_one(automation_id: RowId, c: Container = Depends(container)) -> AutomationDetail:
    svc = _svc(c)
    # Read "running" before the rows: a run that ends in between then shows as
    # running (the client looks again), never as over with its result missing.
    running = svc.is_running(automation_id)
    row = await svc.get(automation_id)
    runs = [_run(run, found) for run, found in await svc.runs_with_deliveries(automation_id)]
    shown = {**_shown(row, Automation), "running": running}
    return AutomationDetail(**shown, session_id=await svc.session_of(row), runs=runs)


@router.get("/automations/{automation_id}/runs")
async def run_history(
    automation_id: RowId, page: Page = Depends(), c: Container = Depends(container)
) -> RunHistory:
    svc = _svc(c)
    await svc.get(automation_id)  # 404 for an unknown automation
    found = await svc.runs_with_deliveries(automation_id, page.limit, page.offset)
    runs = [
        RunRecord(
            **_run(run, deliveries).model_dump(),
            fired_by=run.fired_by,
            session_id=run.session_id,
            usage=RunUsage(**run.usage) if run.usage else None,
        )
        for run, deliveries in found
    ]
    return RunHistory(runs=runs, total=await svc.run_count(automation_id))


@router.patch("/automations/{automation_id}")
async def patch(
    automation_id: RowId, body: AutomationPatch, c: Container = Depends(container)
) -> Automation:
    svc = _svc(c)
    fields = body.model_dump(exclude_unset=True)
    if any(v is None for k, v in fields.items() if k != "budget"):
        from famulus.errors import InvalidRequest

        raise InvalidRequest("Fields may not be null; leave out what you do not change.")
    return _automation(await svc.update(automation_id, fields), svc)


@router.post("/automations/{automation_id}/toggle")
async def toggle(automation_id: RowId, c: Container = Depends(container)) -> Enabled:
    row = await _svc(c).flip(automation_id, "enabled")
    return Enabled(id=row.id, enabled=row.enabled)


@router.post("/automations/{automation_id}/writable")
async def writable(automation_id: RowId, c: Container = Depends(container)) -> Writable:
    row = await _svc(c).flip(automation_id, "writable")
    return Writable(id=row.id, writable=row.writable)


@router.post("/automations/{automation_id}/run", status_code=202)
async def run_now(automation_id: RowId, c: Container = Depends(container)) -> Started:
    return Started(status="started", run_id=await _svc(c).run_now(automation_id))


@router.delete("/automations/{automation_id}")
async def delete(automation_id: RowId, c: Container = Depends(container)) -> Deleted:
    await _svc(c).delete(automation_id)
    return Deleted(status="deleted", id=automation_id)
