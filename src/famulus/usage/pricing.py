"""What a model request cost, from the genai-prices data bundled with the package.

Why genai-prices: it carries cache-read/-write and tiered prices for the
providers famulus speaks to, kept up to date with each release, where a
hand-kept table drifts. It is used offline only: its ``UpdatePrices`` (which
fetches new data over the network) is never started, so the bundled snapshot
is what prices every request. An unknown model, a custom model and the
ChatGPT subscription (openai-codex) have no price: the cost stays None
("unknown"), never a guess, unless the resolved model carries its own
per-token prices (``priced_by`` "custom"), which only counts for a model
genai-prices does not know.
"""

from __future__ import annotations

import logging
from typing import Any

from genai_prices import calc_price
from genai_prices.types import AbstractUsage
from pydantic_ai.usage import RequestUsage

from famulus.llm.types import ResolvedModel

log = logging.getLogger(__name__)

# famulus provider id -> genai-prices provider id (absent: not priced per token).
PRICED_PROVIDERS = {
    "anthropic": "anthropic",
    "openai": "openai",
    "google": "google",
    "openrouter": "openrouter",
}
PRICED_BY = "genai-prices"


def price(
    resolved: ResolvedModel, usage: RequestUsage, context: dict[str, Any] | None = None
) -> tuple[float | None, str | None]:
    """(cost in USD, who priced it); (None, None) when the price is not known."""
    known = genai_price(resolved.provider, resolved.model_id, usage, context)
    if known is not None:
        return known, PRICED_BY
    if resolved.input_price_per_mtok is None and resolved.output_price_per_mtok is None:
        return None, None
    cost = usage.input_tokens * (resolved.input_price_per_mtok or 0.0) / 1e6
    cost += usage.output_tokens * (resolved.output_price_per_mtok or 0.0) / 1e6
    return cost, "custom"


def genai_price(
    provider: str, model_id: str, usage: AbstractUsage, context: dict[str, Any] | None = None
) -> float | None:
    provider_id = PRICED_PROVIDERS.get(provider)
    if provider_id is None:
        return None
    try:
        tier = {k: v for k, v in (context or {}).items() if isinstance(v, str)}
        calc = calc_price(usage, model_id, provider_id=provider_id, price_context=tier or None)
    except (LookupError, ValueError):
        return None
    except Exception as exc:  # pricing must never fail a model request
        log.warning("could not price %s:%s: %s", provider, model_id, exc)
        return None
    return float(calc.total_price)
