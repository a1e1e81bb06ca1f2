"""GET/PATCH /config and GET /models: the role models and the integration switches.

The embedding model and memory state belong to the memory area; this module
only reads them (kv keys, and the memory service when it is installed) so the
config object stays one document.
"""

from __future__ import annotations

import inspect
from dataclasses import asdict
from typing import Any

from famulus import config_keys
from famulus.container import Container
from famulus.errors import InvalidRequest
from famulus.integrations import account, web
from famulus.llm.service import LOOKUP_ORDER, LLMService

WEB_MODES = web.MODES
ROLE_FIELDS = ("chat_model", "research_model", "memory_model")
_SWITCHES = {
    "memory_enabled": config_keys.MEMORY_ENABLED,
    "dreams_enabled": config_keys.DREAMS_ENABLED,
    "account_enabled": config_keys.ACCOUNT_ENABLED,
}


async def _kv(c: Container, key: str) -> Any:
    return await c.kv.get(key, config_keys.DEFAULTS.get(key))


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


class ConfigService:
    def __init__(self, container: Container, llm: LLMService) -> None:
        self.c = container
        self.llm = llm

    async def get(self) -> dict[str, Any]:
        return {
            "chat_model": await self.llm.role_ref("chat"),
            "research_model": await self.llm.role_ref("research"),
            "memory_model": await self.llm.role_ref("memory"),
            "embedding_model": await self._embedding_model(),
            "integrations": {
                "account": {
                    "enabled": await account.enabled(self.c),
                    "connected": await account.active(self.c),
                },
                "memory": await self._memory(),
                "web": await self._web(),
            },
        }

    async def patch(self, changes: dict[str, Any]) -> dict[str, Any]:
        """Validate every change first, then apply them all (no partial updates)."""
        for field in ROLE_FIELDS:
            value = changes.get(field)
            if value is not None:
                await self.llm.require_offered(value, field)
        mode = changes.get("web_search")
        if mode is not None and mode not in WEB_MODES:
            raise InvalidRequest(f"web_search: must be one of {', '.join(WEB_MODES)}.")
        for field in ROLE_FIELDS:
            if field in changes:
                await self.llm.set_role(field.removesuffix("_model"), changes[field])
        if mode is not None:
            await self.c.kv.set(config_keys.WEB_SEARCH_MODE, mode)
        for field, key in _SWITCHES.items():
            if changes.get(field) is not None:
                await self.c.kv.set(key, bool(changes[field]))
        return await self.get()

    async def models(self) -> dict[str, Any]:
        groups = []
        for provider in LOOKUP_ORDER:
            offers = await self.llm.offers(provider)
            if offers:
                groups.append({"provider": provider, "models": [asdict(o.info) for o in offers]})
        return {
            "groups": groups,
            "chat_model": await self.llm.role_ref("chat"),
            "research_model": await self.llm.role_ref("research"),
            "memory_model": await self.llm.role_ref("memory"),
        }

    async def _embedding_model(self) -> str | None:
        memory = self.c.extras.get("memory")
        if memory is not None and hasattr(memory, "current_embedding_model"):
            value = await _maybe_await(memory.current_embedding_model())
            return str(value) if value else None
        value = await self.c.kv.get(config_keys.EMBEDDING_MODEL)
        return str(value) if value else None

    async def _memory(self) -> dict[str, Any]:
        memory = self.c.extras.get("memory")
        connected = False
        if memory is not None and hasattr(memory, "connected"):
            connected = bool(await _maybe_await(memory.connected()))
        return {
            "enabled": bool(await _kv(self.c, config_keys.MEMORY_ENABLED)),
            "connected": connected,
            "dreams": bool(await _kv(self.c, config_keys.DREAMS_ENABLED)),
        }

    async def _web(self) -> dict[str, Any]:
        mode = await _kv(self.c, config_keys.WEB_SEARCH_MODE)
        # The same choice the web tools make (famulus.integrations.web).
        provider = web.provider_for(str(mode), self.llm.services.connected("web-search"))
        return {"connected": provider != "none", "mode": mode, "provider": provider}
