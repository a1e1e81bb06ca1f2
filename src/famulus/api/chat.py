"""Chat endpoints: send a message, withdraw a queued one, background, cancel,
answer an approval."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Path, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, model_validator

from famulus.api.deps import container
from famulus.api.schemas import RequestBody
from famulus.chat.manager import ChatInput, RunManager
from famulus.wiring import Container

router = APIRouter(tags=["chat"])

MAX_MESSAGE_CHARS = 100_000


def manager(c: Container = Depends(container)) -> RunManager:
    return c.chat


class ImageIn(RequestBody):
    media_type: str = Field(description="image/png, image/jpeg, image/gif or image/webp")
    data: str = Field(description="The image bytes, base64-encoded")


class ChatMessageIn(RequestBody):
    message: str = Field(max_length=MAX_MESSAGE_CHARS)
    session_id: str = Field(max_length=200)
    images: list[ImageIn] | None = Field(default=None, max_length=20)
    skip_approvals: bool = False
    client_id: str | None = Field(
        default=None, max_length=200, description="Echoed in message_ingested"
    )


class ChatAccepted(BaseModel):
    run_id: str
    session_id: str
    queued: bool


class WithdrawnOut(BaseModel):
    status: str
    session_id: str
    run_id: str
    client_id: str
    message: str
    images: list[dict[str, Any]] | None = None


class RunRef(RequestBody):
    run_id: str


class CancelIn(RequestBody):
    run_id: str | None = None
    session_id: str | None = None

    @model_validator(mode="after")
    def _one_given(self) -> CancelIn:
        if self.run_id is None and self.session_id is None:
            raise ValueError("give run_id or session_id (or both)")
        return self


class ToolResultIn(RequestBody):
    run_id: str
    tool_id: str
    approved: bool
    result: str | None = Field(default=None, max_length=MAX_MESSAGE_CHARS)


class RunStatus(BaseModel):
    status: str
    run_id: str


class CancelStatus(BaseModel):
    status: str
    run_id: str | None = None


@router.post("/chat/message", status_code=202, response_model=ChatAccepted)
async def post_message(body: ChatMessageIn, m: RunManager = Depends(manager)) -> ChatAccepted:
    images = [i.model_dump() for i in body.images] if body.images else None
    done = await m.submit(
        ChatInput(body.message, body.session_id, images, body.skip_approvals, body.client_id)
    )
    return ChatAccepted(run_id=done.run_id, session_id=done.session_id, queued=done.queued)


@router.delete(
    "/chat/queue/{client_id}",
    response_model=WithdrawnOut,
    response_model_exclude_none=True,
    responses={409: {"description": "The run has already taken the message in."}},
)
async def withdraw_queued(
    client_id: str = Path(max_length=200, description="The client_id the message was sent with"),
    session_id: str = Query(max_length=200),
    c: Container = Depends(container),
) -> WithdrawnOut:
    done = await c.queue.withdraw(session_id, client_id)
    return WithdrawnOut(
        status="withdrawn",
        session_id=done.session_id,
        run_id=done.run_id,
        client_id=done.client_id,
        message=done.message,
        images=done.images,
    )


@router.post("/chat/background", response_model=RunStatus)
async def post_background(body: RunRef, m: RunManager = Depends(manager)) -> RunStatus:
    await m.background(body.run_id)
    return RunStatus(status="backgrounded", run_id=body.run_id)


@router.post("/cancel", response_model=CancelStatus, response_model_exclude_none=True)
async def post_cancel(body: CancelIn, m: RunManager = Depends(manager)) -> JSONResponse:
    run_id = await m.cancel(body.run_id, body.session_id)
    if run_id is None:
        return JSONResponse({"status": "idle"})
    return JSONResponse({"status": "cancelled", "run_id": run_id})


@router.post("/tools/result", response_model=RunStatus)
async def post_tool_result(body: ToolResultIn, m: RunManager = Depends(manager)) -> RunStatus:
    await m.answer(body.run_id, body.tool_id, body.approved, body.result)
    return RunStatus(status="approved" if body.approved else "denied", run_id=body.run_id)
