"""The OpenAI-compatible API: ``GET /v1/models`` and ``POST /v1/chat/completions``.

HTTP only: the request and response shapes OpenAI clients expect, the
``X-Famulus-*`` headers, and Server-Sent Events for ``stream: true``. Which
session a request talks to and how its run is followed is
``channels/openai_compat``'s business; errors are reshaped by
``api/openai_errors.py``. The rules are in docs/api.md, "OpenAI-compatible API".
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import AsyncIterator
from typing import Any, Literal

from fastapi import APIRouter, Depends, Header, Path, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from famulus.api.deps import container
from famulus.channels.openai_compat.service import MODEL_ID, Completion, CompletionRequest, Ended
from famulus.errors import InvalidRequest, UpstreamError
from famulus.wiring import Container

router = APIRouter(prefix="/v1", tags=["openai"])

SESSION_HEADER = "X-Famulus-Session"
RUN_HEADER = "X-Famulus-Run"
APPROVE_HEADER = "X-Famulus-Approve"
OPEN_WEBUI_CHAT_HEADER = "X-OpenWebUI-Chat-Id"
DISCONNECT_POLL_S = 1.0  # how soon a non-streamed request notices its client left


class _Open(BaseModel):
    """OpenAI clients send fields famulus has no use for (temperature, tools …):
    they are accepted and ignored, never a 400."""

    model_config = ConfigDict(extra="allow")


class ImageURL(_Open):
    url: str


class ContentPart(_Open):
    type: str
    text: str | None = None
    image_url: ImageURL | None = None


class MessageIn(_Open):
    role: str
    content: str | list[ContentPart] | None = None


class StreamOptions(_Open):
    include_usage: bool | None = False


class ChatCompletionIn(_Open):
    model: str = Field(max_length=200)
    messages: list[MessageIn] = Field(min_length=1)
    stream: bool | None = False
    stream_options: StreamOptions | None = None
    user: str | None = Field(default=None, max_length=200)
    n: int | None = Field(default=None, description="Only 1 is supported")


class ModelCard(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str = "famulus"


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str


class Choice(BaseModel):
    index: int = 0
    message: AssistantMessage
    finish_reason: Literal["stop"] = "stop"
    logprobs: None = None


class PromptTokensDetails(BaseModel):
    cached_tokens: int = 0


class Usage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    prompt_tokens_details: PromptTokensDetails


class ChatCompletion(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: Usage


class Delta(BaseModel):
    role: Literal["assistant"] | None = None
    content: str | None = None


class ChunkChoice(BaseModel):
    index: int = 0
    delta: Delta
    finish_reason: Literal["stop"] | None = None
    logprobs: None = None


class ChatCompletionChunk(BaseModel):
    """One ``data:`` line of a streamed answer (documented here; sent as SSE)."""

    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    created: int
    model: str
    choices: list[ChunkChoice]
    usage: Usage | None = None


def usage_of(ended: Ended | None) -> Usage:
    """famulus's ``run_finished.usage`` in OpenAI's terms (zeros when the run
    reported none, e.g. a cancelled one)."""
    raw = ended.usage if ended is not None else {}
    prompt, completion = int(raw.get("prompt_tokens", 0)), int(raw.get("completion_tokens", 0))
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=prompt + completion,
        prompt_tokens_details=PromptTokensDetails(
            cached_tokens=int(raw.get("cache_read_tokens", 0))
        ),
    )


@router.get("/models", response_model=ModelList)
async def list_models(c: Container = Depends(container)) -> ModelList:
    return ModelList(data=[ModelCard(id=m, created=c.openai.created) for m in c.openai.model_ids()])


@router.get("/models/{model}", response_model=ModelCard)
async def get_model(
    model: str = Path(max_length=200), c: Container = Depends(container)
) -> ModelCard:
    c.openai.check_model(model)
    return ModelCard(id=model, created=c.openai.created)


_STREAM_DOC: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The answer: a chat completion, or with `stream: true` an event "
        "stream of `data: <ChatCompletionChunk>` lines ending with `data: [DONE]`.",
        "content": {"text/event-stream": {"schema": {"type": "string"}}},
    },
    404: {"description": "Unknown model, or an X-Famulus-Session that names no session."},
    409: {"description": "The session is archived, or busy with another run."},
    502: {"description": "The model provider failed during the run."},
    503: {"description": "No chat model is connected."},
}


@router.post("/chat/completions", response_model=ChatCompletion, responses=_STREAM_DOC)
async def chat_completions(
    body: ChatCompletionIn,
    request: Request,
    session: str | None = Header(
        default=None,
        alias=SESSION_HEADER,
        max_length=200,
        description="Talk to this existing session (wins over `user`).",
    ),
    chat: str | None = Header(
        default=None,
        alias=OPEN_WEBUI_CHAT_HEADER,
        max_length=200,
        description="Open WebUI's chat id (ENABLE_FORWARD_USER_INFO_HEADERS): "
        "one session per chat.",
    ),
    approve: str | None = Header(
        default=None,
        alias=APPROVE_HEADER,
        max_length=20,
        description="`all`: run tools that need approval without asking.",
    ),
    c: Container = Depends(container),
) -> Response:
    if body.n not in (None, 1):
        raise InvalidRequest(
            "n: famulus gives one answer per request; send n=1.", loc=["body", "n"]
        )
    completion = await c.openai.start(
        CompletionRequest(
            model=body.model,
            messages=[m.model_dump() for m in body.messages],
            session_header=session,
            chat_header=chat or None,
            user=body.user or None,
            user_agent=request.headers.get("user-agent"),
            approve_all=_approve_all(approve),
        )
    )
    headers = {SESSION_HEADER: completion.session_id, RUN_HEADER: completion.run_id}
    cid, created = "chatcmpl-" + secrets.token_hex(12), int(time.time())
    if body.stream:
        usage = bool(body.stream_options and body.stream_options.include_usage)
        return StreamingResponse(
            _stream(completion, cid, created, usage, c.settings.sse_ping_interval_s),
            media_type="text/event-stream",
            headers={**headers, "Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )
    content = await _collect(completion, request)
    answer = ChatCompletion(
        id=cid,
        created=created,
        model=MODEL_ID,
        choices=[Choice(message=AssistantMessage(content=content))],
        usage=usage_of(completion.ended),
    )
    return JSONResponse(answer.model_dump(), headers=headers)


def _approve_all(value: str | None) -> bool:
    if value is None:
        return False
    if value.strip().lower() == "all":
        return True
    raise InvalidRequest(
        f"{APPROVE_HEADER} must be 'all' (run tools that need approval without asking); "
        "leave it out to have them refused.",
        loc=["header", APPROVE_HEADER.lower()],
    )


async def _collect(completion: Completion, request: Request) -> str:
    """The whole answer; a run that failed is a 502. A client that hangs up
    cancels the run."""
    pieces: list[str] = []
    try:
        while True:
            item = await completion.next(DISCONNECT_POLL_S)
            if item is None:
                if await request.is_disconnected():
                    completion.abandon()
                    return ""
            elif isinstance(item, Ended):
                break
            else:
                pieces.append(item)
    except BaseException:
        completion.abandon()
        raise
    ended = completion.ended
    if ended is not None and ended.status == "error":
        raise UpstreamError(ended.error or "The run failed.")
    return "".join(pieces)


async def _stream(
    completion: Completion, cid: str, created: int, include_usage: bool, ping_s: float
) -> AsyncIterator[str]:
    """The SSE body; a ``: ping`` comment every ``ping_s`` without text keeps
    proxies and clients from giving up while the agent uses tools."""

    def chunk(delta: Delta, finish: Literal["stop"] | None = None) -> str:
        body = ChatCompletionChunk(
            id=cid,
            created=created,
            model=MODEL_ID,
            choices=[ChunkChoice(delta=delta, finish_reason=finish)],
        )
        return _data(body.model_dump())

    try:
        yield chunk(Delta(role="assistant", content=""))
        while True:
            item = await completion.next(ping_s)
            if item is None:
                yield ": ping\n\n"
            elif isinstance(item, Ended):
                break
            else:
                yield chunk(Delta(content=item))
        ended = completion.ended
        if ended is not None and ended.status == "error":
            message = ended.error or "The run failed."
            yield _data(
                {
                    "error": {
                        "message": message,
                        "type": "server_error",
                        "param": None,
                        "code": "upstream_error",
                    }
                }
            )
        else:
            yield chunk(Delta(), "stop")
            if include_usage:
                last = ChatCompletionChunk(
                    id=cid, created=created, model=MODEL_ID, choices=[], usage=usage_of(ended)
                )
                yield _data(last.model_dump())
        yield "data: [DONE]\n\n"
    finally:
        completion.abandon()


def _data(payload: dict[str, Any]) -> str:
    return f"data: {json.dumps(payload, ensure_ascii=False, separators=(',', ':'))}\n\n"
