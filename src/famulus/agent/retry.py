"""Retry a model request that failed for a reason waiting can fix.

Rate limits (429), overloaded/unavailable providers and dropped connections
are retried up to ``ATTEMPTS`` times with exponential backoff, honouring the
provider's Retry-After when it gives one (capped). A streamed request is only
retried if it failed before the stream opened, so no text is ever sent twice.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from pydantic_ai.exceptions import (
    ModelConnectionError,
    ModelRateLimitError,
    ModelServerError,
    ModelUnavailableError,
)
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings

log = logging.getLogger(__name__)

ATTEMPTS = 3
BASE_DELAY_S = 0.5
MAX_DELAY_S = 8.0
RETRYABLE = (ModelRateLimitError, ModelUnavailableError, ModelServerError, ModelConnectionError)


def backoff(attempt: int, error: BaseException) -> float:
    hinted = getattr(error, "retry_after", None)
    if isinstance(hinted, int | float) and hinted > 0:
        return float(min(hinted, MAX_DELAY_S))
    return float(min(BASE_DELAY_S * (2**attempt), MAX_DELAY_S))


class RetryingModel(WrapperModel):
    """Wraps any pydantic-ai model with bounded retries of transient failures."""

    def __init__(self, wrapped: Model, attempts: int = ATTEMPTS) -> None:
        super().__init__(wrapped)
        self.attempts = attempts

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        for attempt in range(self.attempts):
            try:
                return await self.wrapped.request(
                    messages, model_settings, model_request_parameters
                )
            except RETRYABLE as exc:
                if attempt + 1 >= self.attempts:
                    raise
                await self._pause(attempt, exc)
        raise AssertionError("unreachable")

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: Any = None,
    ) -> AsyncIterator[StreamedResponse]:
        for attempt in range(self.attempts):
            opened = False
            try:
                async with self.wrapped.request_stream(
                    messages, model_settings, model_request_parameters, run_context
                ) as stream:
                    opened = True
                    yield stream
                return
            except RETRYABLE as exc:
                if opened or attempt + 1 >= self.attempts:
                    raise
                await self._pause(attempt, exc)

    async def _pause(self, attempt: int, exc: BaseException) -> None:
        delay = backoff(attempt, exc)
        log.warning(
            "model request failed (%s); retry %d in %.1fs", type(exc).__name__, attempt + 1, delay
        )
        await asyncio.sleep(delay)
