"""Turn (provider, model id, credential, base URL) into a ready pydantic-ai model.

Why here and nowhere else: the agent and memory areas only run models; which
pydantic-ai class speaks which provider's protocol is this module's one job.
No hand-written adapters: every model is a stock pydantic-ai model class.

The SDK clients are built with their own retries off (OpenAI and Anthropic
retry twice by default; google-genai is told one attempt): transient failures
are retried by exactly one layer, ``agent/retry.py`` RetryingModel, so a
failing provider sees 3 requests per model call, not 3 × 3.

Each provider's SDK is imported when a model of that provider is first built:
together the openai, anthropic and google-genai SDKs take seconds to import
and tens of MB, and a server usually talks to one provider, or none yet.
"""

from __future__ import annotations

from pydantic_ai.models import Model

# Local OpenAI-compatible servers (Ollama, vLLM, llama.cpp) ignore the key, but
# the OpenAI client refuses to start without one.
PLACEHOLDER_KEY = "famulus-no-key"
# One attempt per SDK call: the retrying is RetryingModel's job.
SDK_RETRIES = 0


def build_model(
    provider: str,
    model_id: str,
    *,
    api_key: str | None,
    base_url: str,
    account_id: str | None = None,
) -> Model:
    """A pydantic-ai model for one provider; ``api_key`` is the key or OAuth access token."""
    if provider in ("openai", "openrouter", "custom"):
        return _openai_model(model_id, api_key or PLACEHOLDER_KEY, base_url)
    if provider == "anthropic":
        return _anthropic_model(model_id, api_key or PLACEHOLDER_KEY, base_url)
    if provider == "google":
        return _google_model(model_id, api_key or PLACEHOLDER_KEY, base_url)
    if provider == "openai-codex":
        return _codex_model(model_id, api_key or PLACEHOLDER_KEY, base_url, account_id)
    raise ValueError(f"unknown provider {provider!r}")


def _openai_model(model_id: str, key: str, base_url: str) -> Model:
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    openai = OpenAIProvider(base_url=base_url, api_key=key)
    openai.client.max_retries = SDK_RETRIES
    return OpenAIChatModel(model_id, provider=openai)


def _anthropic_model(model_id: str, key: str, base_url: str) -> Model:
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    anthropic = AnthropicProvider(api_key=key, base_url=base_url)
    anthropic.client.max_retries = SDK_RETRIES
    return AnthropicModel(model_id, provider=anthropic)


def _google_model(model_id: str, key: str, base_url: str) -> Model:
    from google.genai.types import HttpRetryOptions
    from pydantic_ai.models.google import GoogleModel
    from pydantic_ai.providers.google import GoogleProvider

    google = GoogleProvider(
        api_key=key, base_url=base_url, retry_options=HttpRetryOptions(attempts=1)
    )
    return GoogleModel(model_id, provider=google)


def _codex_model(model_id: str, token: str, base_url: str, account_id: str | None) -> Model:
    """The Codex backend speaks the Responses API with the ChatGPT OAuth token.

    pydantic-ai's own Codex provider pins the public host; we need the base URL
    from settings, so an OpenAI provider carries the token and the Codex wire
    profile is applied explicitly.
    """
    from pydantic_ai.models.openai_codex import OpenAICodexModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.providers.openai_codex import OpenAICodexProvider

    headers = {"originator": "famulus"}
    if account_id:
        headers["chatgpt-account-id"] = account_id
    base = OpenAIProvider(base_url=base_url, api_key=token)
    client = base.client.with_options(default_headers=headers, max_retries=SDK_RETRIES)
    return OpenAICodexModel(
        model_id,
        provider=OpenAIProvider(openai_client=client),
        profile=OpenAICodexProvider.model_profile(model_id),
    )
