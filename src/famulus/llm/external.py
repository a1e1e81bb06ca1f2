"""External services famulus uses on the person's behalf: web search (Exa) and Telegram.

Like provider keys, a service key is checked against the service before it is
stored (a refusal is a 502 and nothing is stored), lives in the secrets file,
and is only ever shown as a masked hint.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from famulus.errors import InvalidRequest, NotFound, UpstreamError
from famulus.llm.credentials import Credentials, key_hint
from famulus.settings import Settings

TIMEOUT_S = 10.0


@dataclass(frozen=True)
class ServiceInfo:
    id: str
    name: str
    env_vars: tuple[str, ...]


SERVICES: tuple[ServiceInfo, ...] = (
    ServiceInfo("web-search", "Web search (Exa)", ("EXA_API_KEY",)),
    ServiceInfo("telegram", "Telegram bot", ("TELEGRAM_BOT_TOKEN",)),
)
_BY_ID = {s.id: s for s in SERVICES}


class ExternalServices:
    def __init__(self, settings: Settings, credentials: Credentials) -> None:
        self.settings = settings
        self.credentials = credentials
        # Per service: whether its stored key is known to be refused now (the
        # Telegram channel reports a token Telegram stopped accepting). Such a
        # service is listed as not connected, though its key is still stored.
        self.refused: dict[str, Callable[[], bool]] = {}
        # Called with the service id after its key is connected or forgotten.
        self.on_change: list[Callable[[str], None]] = []

    def _info(self, service: str) -> ServiceInfo:
        info = _BY_ID.get(service)
        if info is None:
            names = ", ".join(_BY_ID)
            raise NotFound(f"Unknown service '{service}'; the services are: {names}.")
        return info

    def credential(self, service: str) -> str | None:
        info = _BY_ID.get(service)
        if info is None:
            return None
        return self.credentials.key("service", service, info.env_vars)

    def connected(self, service: str) -> bool:
        refused = self.refused.get(service)
        return self.credential(service) is not None and not (refused is not None and refused())

    def list_all(self) -> list[dict[str, Any]]:
        out = []
        for info in SERVICES:
            key = self.credential(info.id)
            out.append(
                {
                    "id": info.id,
                    "name": info.name,
                    "connected": self.connected(info.id),
                    "key_hint": key_hint(key),
                    "from_env": self.credentials.env_key(info.env_vars) is not None,
                }
            )
        return out

    async def connect(self, service: str, api_key: str) -> None:
        info = self._info(service)
        key = api_key.strip()
        if not key:
            raise InvalidRequest("api_key: must not be empty.")
        if not key.isascii() or not key.isprintable():
            # It would travel in a URL or header, where the HTTP client refuses it
            # with an exception no handler expects (a 500).
            raise InvalidRequest(
                "api_key: has a character no key has (a control character or a "
                "non-ASCII letter); paste the key again.",
                loc=["body", "api_key"],
            )
        await self._check(info, key)
        self.credentials.store("service", service, key)
        self._changed(service)

    def disconnect(self, service: str) -> None:
        self._info(service)
        self.credentials.forget("service", service)
        self._changed(service)

    def _changed(self, service: str) -> None:
        for listener in self.on_change:
            listener(service)

    async def verify(self, service: str) -> bool:
        """Check the key in use (stored or from the environment) with the service now;
        False when there is none, UpstreamError when the service refuses it
        (``famulus doctor``)."""
        key = self.credential(service)
        if key is None:
            return False
        await self._check(self._info(service), key)
        return True

    async def _check(self, info: ServiceInfo, key: str) -> None:
        payload: dict[str, Any] | None = None
        headers: dict[str, str] = {}
        if info.id == "telegram":
            # The token is part of the path; never echo the URL in an error.
            method, target = "GET", f"{self.settings.telegram_base_url.rstrip('/')}/bot{key}/getMe"
        else:
            # Exa has no key-info endpoint: the cheapest check is a one-result search.
            method, target = "POST", f"{self.settings.exa_base_url.rstrip('/')}/search"
            headers = {"x-api-key": key}
            payload = {"query": "famulus connection check", "numResults": 1}
        try:
            async with httpx.AsyncClient(timeout=TIMEOUT_S) as http:
                response = await http.request(method, target, headers=headers, json=payload)
        except httpx.TimeoutException:
            raise UpstreamError(
                f"{info.name} did not answer within {TIMEOUT_S:.0f} s; try again."
            ) from None
        except httpx.HTTPError as exc:
            raise UpstreamError(f"Could not reach {info.name}: {type(exc).__name__}.") from None
        if response.status_code >= 400 or not _ok_body(info.id, response):
            raise UpstreamError(
                f"{info.name} refused the key ({_reason(response)}); nothing was stored."
            )


def _ok_body(service: str, response: httpx.Response) -> bool:
    if service != "telegram":
        return True
    try:
        body = response.json()
    except ValueError:
        return False
    return isinstance(body, dict) and body.get("ok") is True


def _reason(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        body = None
    message = None
    if isinstance(body, dict):
        message = body.get("description") or body.get("error") or body.get("message")
    if not isinstance(message, str) or not message.strip():
        message = response.reason_phrase or "no reason given"
    return f"HTTP {response.status_code}: {message.strip()[:300]}"
