"""What the rest of famulus needs to know about a model it is about to use.

``ResolvedModel`` is the hand-off between ``llm`` (which knows providers,
credentials and catalogs) and ``agent``/``memory`` (which only run models).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic_ai.models import Model
from pydantic_ai.usage import RequestUsage

Role = Literal["chat", "research", "memory"]


class UsageMeter(Protocol):
    """Where model requests are checked against budgets and recorded
    (``usage.service.UsageService`` is one); ``usage.model`` calls it."""

    async def before_request(self) -> None: ...

    async def record(
        self,
        resolved: ResolvedModel,
        usage: RequestUsage,
        details: dict[str, Any] | None,
        estimated_input: int | None,
    ) -> None: ...

    async def run_cost(self, run_id: str) -> float | None: ...


@dataclass(frozen=True)
class ResolvedModel:
    model_id: str  # the identifier shown in /config and /models
    provider: str  # anthropic | openai | openai-codex | google | openrouter | custom | test
    model: Model  # a ready pydantic-ai model (credentials and base URL applied)
    context_window: int
    max_output_tokens: int
    vision: bool = False
    input_price_per_mtok: float | None = None  # USD per million input tokens, if known
    output_price_per_mtok: float | None = None
    # Set by LLMService.resolve: every agent built on this model is metered.
    meter: UsageMeter | None = field(default=None, compare=False, repr=False)
