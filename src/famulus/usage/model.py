"""The one seam every model request passes: budgets before, the ledger after.

``metered`` wraps the model an agent is built on (chat, research sub-agent,
memory jobs, compaction), so no caller has to remember to record anything:
each request is checked against the budgets before it is sent and its
provider-reported usage is recorded when it returns. Who it was for comes
from the usage tag (``usage.tag``) its caller set.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings

from famulus.agent.tokens import messages_tokens, text_tokens, tool_tokens
from famulus.llm.types import ResolvedModel, UsageMeter

# The ``system`` of pydantic-ai's in-process models (FunctionModel, TestModel).
LOCAL_SYSTEMS = frozenset({"function", "test"})


class MeteredModel(WrapperModel):
    def __init__(self, wrapped: Model, resolved: ResolvedModel, meter: UsageMeter) -> None:
        super().__init__(wrapped)
        self.resolved = resolved
        self.meter = meter

    def _estimate(self, messages: list[ModelMessage], params: ModelRequestParameters) -> int | None:
        """Our estimate of the request, kept to compare with the provider's count;
        None for pydantic-ai's local stand-ins, whose usage is a guess of their own."""
        if self.system in LOCAL_SYSTEMS:
            return None
        return estimate_input(messages, params)

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        await self.meter.before_request()
        estimated = self._estimate(messages, model_request_parameters)
        response = await self.wrapped.request(messages, model_settings, model_request_parameters)
        await self.meter.record(self.resolved, response.usage, response.provider_details, estimated)
        return response

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: Any = None,
    ) -> AsyncIterator[StreamedResponse]:
        await self.meter.before_request()
        estimated = self._estimate(messages, model_request_parameters)
        async with self.wrapped.request_stream(
            messages, model_settings, model_request_parameters, run_context
        ) as stream:
            try:
                yield stream
            finally:
                # A stream cut short (cancelled) still cost what it used so far.
                done = stream.get()
                record = self.meter.record(
                    self.resolved, done.usage, done.provider_details, estimated
                )
                await asyncio.shield(record)


def estimate_input(messages: list[ModelMessage], params: ModelRequestParameters) -> int:
    """What ``agent.tokens`` estimates the request carries: instructions,
    messages and tool definitions, the same parts ``Prepared.estimate_tokens`` counts."""
    instructions = next(
        (m.instructions for m in reversed(messages) if isinstance(m, ModelRequest)), None
    )
    return (
        messages_tokens(messages)
        + tool_tokens(params.tool_defs.values())
        + text_tokens(instructions or "")
    )


def metered(resolved: ResolvedModel, inner: Model | None = None) -> Model:
    """``inner`` (default: the resolved model) wrapped by the resolved model's meter."""
    model = inner if inner is not None else resolved.model
    if resolved.meter is None:
        return model
    return MeteredModel(model, resolved, resolved.meter)
