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

from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings

from famulus.llm.types import ResolvedModel, UsageMeter


class MeteredModel(WrapperModel):
    def __init__(self, wrapped: Model, resolved: ResolvedModel, meter: UsageMeter) -> None:
        super().__init__(wrapped)
        self.resolved = resolved
        self.meter = meter

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        await self.meter.before_request()
        response = await self.wrapped.request(messages, model_settings, model_request_parameters)
        await self.meter.record(self.resolved, response.usage, response.provider_details)
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
        async with self.wrapped.request_stream(
            messages, model_settings, model_request_parameters, run_context
        ) as stream:
            try:
                yield stream
            finally:
                # A stream cut short (cancelled) still cost what it used so far.
                done = stream.get()
                record = self.meter.record(self.resolved, done.usage, done.provider_details)
                await asyncio.shield(record)


def metered(resolved: ResolvedModel, inner: Model | None = None) -> Model:
    """``inner`` (default: the resolved model) wrapped by the resolved model's meter."""
    model = inner if inner is not None else resolved.model
    if resolved.meter is None:
        return model
    return MeteredModel(model, resolved, resolved.meter)
