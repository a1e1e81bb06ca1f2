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

MAX_DETAIL = 300


@dataclass(frozen=True)
class Failure:
    message: str
    recoverable: bool


def _detail(exc: BaseException) -> str:
    text = str(getattr(exc, "message", None) or exc).strip()
    return text[:MAX_DETAIL]


def describe(exc: BaseException) -> Failure:  # noqa: PLR0911 - one branch per cause
    if isinstance(exc, ModelAuthenticationError):
        return Failure(
            "The model provider rejected the API key. Reconnect the provider with a valid key "
            "(POST /providers/{id}/connect).",
            False,
        )
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
    if isinstance(exc, UsageLimitExceeded):
        return Failure(f"The run stopped at its usage limit: {_detail(exc)}", True)
    if isinstance(exc, ModelHTTPError):
        return Failure(
            f"The model provider answered with HTTP {exc.status_code}: {_detail(exc)}", True
        )
    if isinstance(exc, ModelAPIError | UnexpectedModelBehavior):
        return Failure(f"The model provider failed: {_detail(exc)}", True)
    return Failure(f"The run failed unexpectedly ({type(exc).__name__}); see the server log.", True)
