"""Check a key against the provider before it is stored.

Each provider's cheapest authenticated call is its list-models endpoint; a
failure there (bad key, no access, unreachable) is reported as a 502 with the
provider's own reason so the person knows what to fix. OpenRouter is the
exception: its model list is public and answers any key, so the key is checked
with its key-info endpoint (``GET {base}/key``) first.
"""

from __future__ import annotations

from typing import Any

import httpx

from famulus.errors import UpstreamError

TIMEOUT_S = 10.0
ANTHROPIC_VERSION = "2023-06-01"


def _request(provider: str, base_url: str, key: str) -> tuple[str, dict[str, str], dict[str, str]]:
    base = base_url.rstrip("/")
    if provider == "anthropic":
        headers = {"x-api-key": key, "anthropic-version": ANTHROPIC_VERSION}
        return f"{base}/v1/models", headers, {}
    if provider == "google":
        return f"{base}/v1beta/models", {}, {"key": key}
    return f"{base}/models", {"Authorization": f"Bearer {key}"}, {}


def _reason(response: httpx.Response) -> str:
    """The provider's own error message when it sent one, else the status line."""
    try:
        body: Any = response.json()
    except ValueError:
        body = None
    message = None
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict):
            message = err.get("message")
        elif isinstance(err, str):
            message = err
        message = message or body.get("message") or body.get("detail")
    if not isinstance(message, str) or not message.strip():
        message = response.reason_phrase or "no reason given"
    return f"HTTP {response.status_code}: {message.strip()[:300]}"


def _model_ids(body: Any) -> list[str]:
    if not isinstance(body, dict):
        return []
    items = body.get("data") or body.get("models") or []
    ids: list[str] = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict):
            ident = item.get("id") or item.get("name")
            if isinstance(ident, str):
                ids.append(ident.removeprefix("models/"))
    return ids


async def _get(
    name: str, base_url: str, url: str, headers: dict[str, str], params: dict[str, str]
) -> httpx.Response:
    """One GET to the provider; a refusal or no answer is an UpstreamError naming it."""
    try:
        async with httpx.AsyncClient(timeout=TIMEOUT_S) as http:
            response = await http.get(url, headers=headers, params=params)
    except httpx.TimeoutException:
        raise UpstreamError(
            f"{name} did not answer within {TIMEOUT_S:.0f} s; try again later."
        ) from None
    except httpx.HTTPError as exc:
        raise UpstreamError(
            f"Could not reach {name} at {base_url}: {type(exc).__name__}."
        ) from None
    if response.status_code >= 400:
        raise UpstreamError(f"{name} refused the key ({_reason(response)}); nothing was stored.")
    return response


async def check_key(provider: str, name: str, base_url: str, key: str) -> list[str]:
    """Check ``key`` with the provider; return the model ids it lists.

    Raises UpstreamError with the provider's reason when the key is refused or
    the provider cannot be reached.
    """
    url, headers, params = _request(provider, base_url, key)
    if provider == "openrouter":
        await _get(name, base_url, f"{base_url.rstrip('/')}/key", headers, {})
    response = await _get(name, base_url, url, headers, params)
    try:
        return _model_ids(response.json())
    except ValueError:
        return []
