"""The built-in providers and a small static catalog of their models.

Why static: the catalog carries what the provider's list-models endpoint does
not (context window, output limit, vision, prices), and the server must work
offline. The numbers are the providers' published figures; prices are USD per
million tokens. Subscription access (openai-codex) has no per-token price.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

AuthType = Literal["api_key", "oauth"]


@dataclass(frozen=True)
class ModelInfo:
    id: str
    context_window: int
    max_output_tokens: int
    vision: bool = False
    input_price_per_mtok: float | None = None
    output_price_per_mtok: float | None = None


@dataclass(frozen=True)
class ProviderInfo:
    id: str
    name: str
    auth_type: AuthType
    env_vars: tuple[str, ...]  # environment variables that carry a key, first wins
    default_model: str | None  # becomes the chat model on connect when none is set
    models: tuple[ModelInfo, ...]


_ANTHROPIC = (
    ModelInfo("claude-sonnet-4-6", 200_000, 64_000, True, 3.0, 15.0),
    ModelInfo("claude-sonnet-4-5", 200_000, 64_000, True, 3.0, 15.0),
    ModelInfo("claude-opus-4-1", 200_000, 32_000, True, 15.0, 75.0),
    ModelInfo("claude-haiku-4-5", 200_000, 64_000, True, 1.0, 5.0),
)

_OPENAI = (
    ModelInfo("gpt-4.1", 1_047_576, 32_768, True, 2.0, 8.0),
    ModelInfo("gpt-4.1-mini", 1_047_576, 32_768, True, 0.4, 1.6),
    ModelInfo("gpt-4o", 128_000, 16_384, True, 2.5, 10.0),
    ModelInfo("gpt-5", 400_000, 128_000, True, 1.25, 10.0),
    ModelInfo("gpt-5-mini", 400_000, 128_000, True, 0.25, 2.0),
    ModelInfo("o4-mini", 200_000, 100_000, True, 1.1, 4.4),
)

_CODEX = (
    ModelInfo("gpt-5-codex", 400_000, 128_000, True),
    ModelInfo("gpt-5", 400_000, 128_000, True),
)

_GOOGLE = (
    ModelInfo("gemini-2.5-pro", 1_048_576, 65_536, True, 1.25, 10.0),
    ModelInfo("gemini-2.5-flash", 1_048_576, 65_536, True, 0.3, 2.5),
    ModelInfo("gemini-2.5-flash-lite", 1_048_576, 65_536, True, 0.1, 0.4),
)

_OPENROUTER = (
    ModelInfo("anthropic/claude-sonnet-4.5", 200_000, 64_000, True, 3.0, 15.0),
    ModelInfo("openai/gpt-4.1", 1_047_576, 32_768, True, 2.0, 8.0),
    ModelInfo("google/gemini-2.5-pro", 1_048_576, 65_536, True, 1.25, 10.0),
    ModelInfo("meta-llama/llama-3.3-70b-instruct", 131_072, 16_384, False, 0.13, 0.4),
)

PROVIDERS: tuple[ProviderInfo, ...] = (
    ProviderInfo(
        "anthropic", "Anthropic", "api_key", ("ANTHROPIC_API_KEY",), "claude-sonnet-4-6", _ANTHROPIC
    ),
    ProviderInfo("openai", "OpenAI", "api_key", ("OPENAI_API_KEY",), "gpt-4.1", _OPENAI),
    ProviderInfo(
        "openai-codex", "OpenAI Codex (ChatGPT sign-in)", "oauth", (), "gpt-5-codex", _CODEX
    ),
    ProviderInfo(
        "google",
        "Google Gemini",
        "api_key",
        ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
        "gemini-2.5-pro",
        _GOOGLE,
    ),
    ProviderInfo(
        "openrouter",
        "OpenRouter",
        "api_key",
        ("OPENROUTER_API_KEY",),
        "anthropic/claude-sonnet-4.5",
        _OPENROUTER,
    ),
    ProviderInfo("custom", "Custom (OpenAI-compatible)", "api_key", (), None, ()),
)

PROVIDER_IDS: tuple[str, ...] = tuple(p.id for p in PROVIDERS)
_BY_ID = {p.id: p for p in PROVIDERS}


def provider(provider_id: str) -> ProviderInfo | None:
    return _BY_ID.get(provider_id)


def model(provider_id: str, model_id: str) -> ModelInfo | None:
    info = _BY_ID.get(provider_id)
    if info is None:
        return None
    return next((m for m in info.models if m.id == model_id), None)
