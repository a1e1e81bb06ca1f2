"""/channels/telegram: the Telegram channel's state, and who may talk to the bot."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Path
from pydantic import BaseModel, Field

from famulus.api.deps import container
from famulus.api.schemas import RequestBody
from famulus.channels.telegram.channel import TelegramChannel
from famulus.wiring import Container

router = APIRouter(tags=["channels"])

# Telegram chat ids are signed and fit in 52 bits.
ChatId = Path(ge=-(2**52), le=2**52, description="The Telegram chat id.")
Code = Path(min_length=1, max_length=32, description="The pairing code.")


def telegram(c: Container = Depends(container)) -> TelegramChannel:
    return c.telegram


class TelegramChat(BaseModel):
    chat_id: int
    title: str
    session_id: str | None
    approved_at: str


class TelegramPairing(BaseModel):
    code: str
    chat_id: int
    title: str
    created_at: str
    expires_at: str


class TelegramState(BaseModel):
    status: str
    reason: str | None
    bot_username: str | None
    chats: list[TelegramChat]
    pairings: list[TelegramPairing]


class PairingIn(RequestBody):
    code: str = Field(min_length=1, max_length=32)


class Approved(BaseModel):
    status: str
    chat_id: int
    title: str


class Done(BaseModel):
    status: str


@router.get("/channels/telegram", response_model=TelegramState)
async def telegram_state(t: TelegramChannel = Depends(telegram)) -> Any:
    return await t.describe()


@router.post("/channels/telegram/pairings", response_model=Approved)
async def approve_pairing(body: PairingIn, t: TelegramChannel = Depends(telegram)) -> Any:
    return await t.approve(body.code)


@router.delete("/channels/telegram/pairings/{code}", response_model=Done)
async def deny_pairing(code: str = Code, t: TelegramChannel = Depends(telegram)) -> Any:
    await t.deny(code)
    return {"status": "denied"}


@router.delete("/channels/telegram/chats/{chat_id}", response_model=Done)
async def remove_chat(chat_id: int = ChatId, t: TelegramChannel = Depends(telegram)) -> Any:
    await t.revoke(chat_id)
    return {"status": "removed"}
