"""Helpers for chat tests: scripted pydantic-ai models and event polling.

``install_model`` wraps a FunctionModel/TestModel in a ResolvedModel and puts
it in front of the real LLMService with ``LLMService.override``, for the rest
of the app's life; ``events_until`` polls the persisted event log (the
in-process transport cannot stream SSE).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import ExitStack
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models import Model
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from famulus.llm.types import ResolvedModel

StreamFn = Callable[[list[ModelMessage], AgentInfo], AsyncIterator[str | dict[int, DeltaToolCall]]]


def resolved(
    model: Model,
    *,
    vision: bool = False,
    context_window: int = 100_000,
    model_id: str = "test-model",
    prices: tuple[float | None, float | None] = (None, None),
) -> ResolvedModel:
    return ResolvedModel(
        model_id=model_id,
        provider="test",
        model=model,
        context_window=context_window,
        max_output_tokens=1000,
        vision=vision,
        input_price_per_mtok=prices[0],
        output_price_per_mtok=prices[1],
    )


def install_model(app: Any, model: Model | ResolvedModel, role: str = "chat", **kw: Any) -> None:
    """``model`` answers for ``role`` from now until the app is thrown away (a
    later call for the same role takes over); ``with llm.override(...)`` in a
    test scopes one more narrowly."""
    llm = app.state.container.llm
    chosen = model if isinstance(model, ResolvedModel) else resolved(model, **kw)
    held(app).enter_context(llm.override(role, chosen))


def held(app: Any) -> ExitStack:
    """The overrides a test put on ``app``, kept on the app itself: they go with it.

    (A weak map keyed by the service would never let go: each override's
    frame refers back to the service.)
    """
    stack: ExitStack | None = getattr(app.state, "model_overrides", None)
    if stack is None:
        stack = app.state.model_overrides = ExitStack()
    return stack


def scripted(*turns: Any, delay: float = 0.0) -> FunctionModel:
    """A streaming FunctionModel playing ``turns`` in order; a turn is text (str),
    a tool call ``("tool", name, args_json)``, or a callable(messages) -> turn."""
    script = list(turns)
    calls = {"n": 0}

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        turn = script[min(calls["n"], len(script) - 1)] if script else "ok"
        calls["n"] += 1
        if callable(turn):
            turn = turn(messages)
        if isinstance(turn, tuple) and turn[0] == "tool":
            yield {
                0: DeltaToolCall(name=turn[1], json_args=turn[2], tool_call_id=f"call_{calls['n']}")
            }
            return
        for word in str(turn).split(" "):
            if delay:
                await asyncio.sleep(delay)
            yield word + " "

    def request(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turn = script[min(calls["n"], len(script) - 1)] if script else "ok"
        calls["n"] += 1
        if callable(turn):
            turn = turn(messages)
        if isinstance(turn, tuple) and turn[0] == "tool":
            return ModelResponse(parts=[ToolCallPart(turn[1], turn[2], f"call_{calls['n']}")])
        return ModelResponse(parts=[TextPart(str(turn))])

    return FunctionModel(request, stream_function=stream)


async def events_until(
    app: Any, session_id: str, stop: str | tuple[str, ...], timeout: float = 5.0, after: int = 0
) -> list[dict[str, Any]]:
    """Persisted events after ``after`` until one of type ``stop`` appears."""
    stops = (stop,) if isinstance(stop, str) else stop
    hub = app.state.container.events
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        events = [e.data | {"_seq": e.seq} for e in await hub.replay(session_id, after)]
        if any(e["type"] in stops for e in events):
            return events
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"no {stops} event; got {[e['type'] for e in events]}")
        await asyncio.sleep(0.02)


async def until_streaming(
    app: Any, session_id: str, deltas: int = 2, timeout: float = 10.0
) -> None:
    """Wait until the session's run has streamed ``deltas`` text deltas.

    A fixed sleep is a guess that a loaded CI machine can lose; the live
    deltas say for certain that the model is mid-answer.
    """
    hub = app.state.container.events
    sub = hub.subscribe(session_id)
    seen = 0
    try:
        async with asyncio.timeout(timeout):
            while seen < deltas:
                event = await sub.queue.get()
                if event.type == "text_delta":
                    seen += 1
    finally:
        hub.unsubscribe(session_id, sub)
