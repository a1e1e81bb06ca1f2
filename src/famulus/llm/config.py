"""GET/PATCH /config and GET /models: the role models and the integration switches.

The embedding model and memory state belong to the memory area; this module
only reads them, through the small ``MemoryStatus`` port, so the config object
stays one document without the llm area importing memory.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Protocol

from famulus import config_keys
from famulus.core import Core
from famulus.errors import InvalidRequest
from famulus.integrations import account, web
from famulus.llm.service import LOOKUP_ORDER, LLMService
from famulus.usage.service import budget_in_force

WEB_MODES = web.MODES
ROLE_FIELDS = ("chat_model", "research_model", "memory_model")
_SWITCHES = {
    "memory_enabled": config_keys.MEMORY_ENABLED,
    "dreams_enabled": config_keys.DREAMS_ENABLED,
    "account_enabled": config_keys.ACCOUNT_ENABLED,
}

_BUDGETS = {"budget_daily": config_keys.BUDGET_DAILY, "budget_monthly": config_keys.BUDGET_MONTHLY}


class DefaultNotifier(Protocol):
    """The person's default notifier (``notify.service.NotifierService``)."""

    async def default_name(self) -> str | None: ...

    async def require(self, name: str, field: str) -> None: ...

    async def set_default(self, name: str | None) -> None: ...


class MemoryStatus(Protocol):
    """What /config shows of memory (``memory.facade.MemoryFacade`` has it)."""

    def current_embedding_model(self) -> str: ...

    def connected(self) -> bool: ...


async def _kv(c: Core, key: str) -> Any:
    return await c.kv.get(key, config_keys.DEFAULTS.get(key))


class ConfigService:
    def __init__(
        self,
        core: Core,
        llm: LLMService,
        memory: MemoryStatus,
        notifiers: DefaultNotifier,
    ) -> None:
        self.c = core
        self.llm = llm
        self.memory = memory
        self.notifiers = notifiers

    async def get(self) -> dict[str, Any]:
        return {
            "chat_model": await self.llm.role_ref("chat"),
            "research_model": await self.llm.role_ref("research"),
            "memory_model": await self.llm.role_ref("memory"),
            "embedding_model": await self._embedding_model(),
            "default_notifier": await self.notifiers.default_name(),
            "budget_daily": await budget_in_force(self.c.kv, self.c.settings, "daily"),
            "budget_monthly": await budget_in_force(self.c.kv, self.c.settings, "monthly"),
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
        notifier = changes.get("default_notifier")
        if notifier is not None:
            await self.notifiers.require(notifier, "default_notifier")
        for field in ROLE_FIELDS:
            if field in changes:
                await self.llm.set_role(field.removesuffix("_model"), changes[field])
        if mode is not None:
            await self.c.kv.set(config_keys.WEB_SEARCH_MODE, mode)
        for field, key in _BUDGETS.items():
            if field in changes:  # null: no cap, whatever the setting says
                await self.c.kv.set(key, changes[field])
        for field, key in _SWITCHES.items():
            if changes.get(field) is not None:
                await self.c.kv.set(key, bool(changes[field]))
        if "default_notifier" in changes:
            await self.notifiers.set_default(changes["default_notifier"])
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
        return self.memory.current_embedding_model() or None

    async def _memory(self) -> dict[str, Any]:
        return {
            "enabled": bool(await _kv(self.c, config_keys.MEMORY_ENABLED)),
            "connected": self.memory.connected(),
            "dreams": bool(await _kv(self.c, config_keys.DREAMS_ENABLED)),
        }

    async def _web(self) -> dict[str, Any]:
        mode = await _kv(self.c, config_keys.WEB_SEARCH_MODE)
        # The same choice the web tools make (famulus.integrations.web).
        provider = web.provider_for(str(mode), self.llm.services.connected("web-search"))
        return {"connected": provider != "none", "mode": mode, "provider": provider}
