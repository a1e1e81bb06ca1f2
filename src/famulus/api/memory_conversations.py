"""Conversation recall over HTTP: search what was said in past sessions."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field

from famulus.api.memory_admin import TimeRangeOut
from famulus.api.memory_common import RowOut, memory
from famulus.api.schemas import RequestBody
from famulus.errors import InvalidRequest
from famulus.memory.conversations import (
    MAX_SEARCH_LIMIT,
    SEARCH_LIMIT,
    ConversationIndex,
)
from famulus.memory.service import MemoryService

router = APIRouter(tags=["memory"])


class ConversationSearchIn(RequestBody):
    query: str = Field(min_length=1, max_length=1000)
    session_id: str | None = Field(default=None, min_length=1, max_length=200)
    since: str | None = Field(
        default=None,
        max_length=40,
        description="A date (whole day, FAMULUS_TIMEZONE if set, else UTC) or ISO datetime.",
    )
    until: str | None = Field(
        default=None,
        max_length=40,
        description="A date (inclusive, FAMULUS_TIMEZONE if set, else UTC) or ISO datetime.",
    )
    speaker: Literal["user", "assistant"] | None = None
    limit: int | None = Field(default=None, ge=1, le=MAX_SEARCH_LIMIT)


class ConversationHitOut(RowOut):
    message_id: int
    session_id: str
    session_name: str
    role: str
    created_at: str
    snippet: str
    text: str
    score: float


class ConversationSearchOut(BaseModel):
    results: list[ConversationHitOut]
    time_range: TimeRangeOut | None = None  # the period the query named (issue 12)


def _index(m: MemoryService) -> ConversationIndex:
    index: ConversationIndex | None = m.conversations
    if index is None:  # only a half-built container lacks it
        raise InvalidRequest("Conversation search is not available.")
    return index


@router.post("/memory/conversations/search")
async def search_conversations(
    body: ConversationSearchIn, m: MemoryService = Depends(memory)
) -> ConversationSearchOut:
    """Past user and assistant messages matching the query, best first, one per message."""
    if not body.query.strip():
        raise InvalidRequest("query: say in plain words what to look for.")
    index = _index(m)
    where = index.filter(
        session_id=body.session_id, since=body.since, until=body.until, speaker=body.speaker
    )
    found = await index.search(body.query, where, body.limit or SEARCH_LIMIT)
    span = found.time_range
    return ConversationSearchOut.model_validate(
        {
            "results": found.hits,
            "time_range": span
            and {"start": span.start.isoformat(), "end": span.end.isoformat(), "text": span.text},
        }
    )
