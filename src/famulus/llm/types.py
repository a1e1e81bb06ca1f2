"""What the rest of famulus needs to know about a model it is about to use.

``ResolvedModel`` is the hand-off between ``llm`` (which knows providers,
credentials and catalogs) and ``agent``/``memory`` (which only run models).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic_ai.models import Model

Role = Literal["chat", "research", "memory"]


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
