"""Provider failures → a message a person can act on, and whether to retry later.

The provider's own wording is kept short and never includes request headers,
so no key can leak into an event.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic_ai.exceptions import (
    ModelAPIError,
    ModelAuthenticationError,
    ModelConnectionError,
    ModelContextWindowExceededError,
    ModelHTTPError,
    ModelNotFoundError,
    ModelQuotaExceededError,
    ModelRateLimitError,
    ModelRequestTimeout,
    ModelTimeoutError,
    UnexpectedModelBehavior,
    UsageLimitExceeded,
)

from famulus.llm.types import ResolvedModel
from famulus.usage.service import BudgetExceeded

MAX_DETAIL = 300
MAX_BODY_MESSAGE = 200
# Providers connected with POST /providers/{id}/connect; custom models carry their own
# key; openai-codex signs in through OAuth.
_CONNECTABLE = frozenset({"anthropic", "openai", "google", "openrouter"})


@dataclass(frozen=True)
class Failure:
    message: str
    recoverable: bool


def _detail(exc: BaseException) -> str:
    text = str(getattr(exc, "message", None) or exc).strip()
    return text[:MAX_DETAIL]


def _trim(text: str) -> str:
    text = " ".join(text.split())
    if len(text) > MAX_BODY_MESSAGE:
        text = text[: MAX_BODY_MESSAGE - 1].rstrip() + "…"
    return text


def body_message(body: object) -> str:
    """The provider's own short explanation in an error body: ``message``,
    ``error.message`` or a string ``error``; a plain string body trimmed; else ''."""
    if isinstance(body, dict):
        for candidate in (body.get("message"), body.get("error"), body.get("detail")):
            if isinstance(candidate, dict):
                candidate = candidate.get("message")
            if isinstance(candidate, str) and candidate.strip():
                return _trim(candidate)
        return ""
    if isinstance(body, bytes):
        body = body.decode("utf-8", errors="replace")
    if isinstance(body, str):
        return _trim(body)
    return ""


def _bad_key(model: ResolvedModel | None) -> str:
    lead = "The model provider rejected the API key."
    if model is None:
        return (
            f"{lead} Reconnect that provider with a valid key (GET /providers lists them), "
            "or re-register a custom model with the right api_key (POST /models/custom)."
        )
    if model.provider == "custom":
        return (
            f"The endpoint of the custom model '{model.model_id}' rejected its API key. "
            f"Re-register the model with the right api_key: DELETE /models/custom/"
            f"{model.model_id}, then POST /models/custom."
        )
    if model.provider == "openai-codex":
        return (
            "OpenAI (Codex) rejected the sign-in. Sign in again with the OAuth flow "
            "(POST /providers/openai-codex/oauth/browser/start)."
        )
    if model.provider in _CONNECTABLE:
        return (
            f"The model provider '{model.provider}' rejected the API key. Reconnect it with "
            f"a valid key (POST /providers/{model.provider}/connect)."
        )
    return f"{lead} Check the key of the model '{model.model_id}'."


def describe(  # noqa: PLR0911 - one branch per cause
    exc: BaseException, model: ResolvedModel | None = None
) -> Failure:
    """``model`` is the run's resolved model, so the advice names its provider."""
    if isinstance(exc, ModelAuthenticationError):
        return Failure(_bad_key(model), False)
    if isinstance(exc, ModelRateLimitError):
        return Failure(
            "The model provider is rate-limiting requests and did not recover after 3 tries. "
            "Wait a minute and send the message again.",
            True,
        )
    if isinstance(exc, ModelQuotaExceededError):
        return Failure("The model provider says the account's quota or credit is used up.", False)
    if isinstance(exc, ModelContextWindowExceededError):
        return Failure(
            "The conversation is too long for the model's context window. Run POST /compact "
            "or start a new session, then send the message again.",
            True,
        )
    if isinstance(exc, ModelNotFoundError):
        return Failure("The provider does not know the configured model; pick another one.", False)
    if isinstance(exc, ModelTimeoutError | ModelRequestTimeout):
        return Failure("The model provider did not answer in time. Send the message again.", True)
    if isinstance(exc, ModelConnectionError):
        return Failure(
            "Could not reach the model provider. Check the network and its base URL.", True
        )
    if isinstance(exc, BudgetExceeded):
        return Failure(str(exc), False)
    if isinstance(exc, UsageLimitExceeded):
        return Failure(f"The run stopped at its usage limit: {_detail(exc)}", True)
    if isinstance(exc, ModelHTTPError):
        said = body_message(exc.body)
        answered = f"The model provider answered HTTP {exc.status_code}" + (
            f" ({said})." if said else "."
        )
        advice = " Try again later." if exc.status_code >= 500 else " Send the message again."
        return Failure(answered + advice, True)
    if isinstance(exc, ModelAPIError | UnexpectedModelBehavior):
        return Failure(f"The model provider failed: {_detail(exc)}", True)
    return Failure(f"The run failed unexpectedly ({type(exc).__name__}); see the server log.", True)
