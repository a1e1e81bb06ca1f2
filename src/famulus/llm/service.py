"""LLMService: which models are usable, and a ready model for each role.

This is the interface the chat and memory areas code against
(``Container.llm`` in ``wiring.py``): ``resolve(role)``, ``override``,
``credential``, ``base_url`` and ``service_credential``. Provider connection,
custom models and model identifiers are managed here too, so every rule about
"which model does this name mean" lives in one place.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from famulus import config_keys
from famulus.errors import InvalidRequest, NotConfigured, NotFound
from famulus.llm import catalog
from famulus.llm.builder import build_model
from famulus.llm.catalog import ModelInfo
from famulus.llm.credentials import Credentials
from famulus.llm.custom import CustomModels
from famulus.llm.external import ExternalServices
from famulus.llm.oauth import CodexOAuth
from famulus.llm.types import ResolvedModel, Role, UsageMeter
from famulus.secrets import SecretsStore
from famulus.settings import Settings
from famulus.store.kv import KVStore
from famulus.store.llm import CustomModelStore

log = logging.getLogger(__name__)

ROLE_KEYS: dict[str, str] = {
    "chat": config_keys.CHAT_MODEL,
    "research": config_keys.RESEARCH_MODEL,
    "memory": config_keys.MEMORY_MODEL,
}
REMOTE_MODELS_KEY = "llm.remote_models."  # + provider id: ids listed when the key was checked
# Limits assumed for a model the provider lists but our catalog does not know.
UNKNOWN_MODEL = ModelInfo("", context_window=128_000, max_output_tokens=8_192)
# Bare model ids are looked up in this order: the user's own models first.
LOOKUP_ORDER = ("custom", "anthropic", "openai", "openai-codex", "google", "openrouter")

# Providers a person connects with a key, in catalog order.
_KEYED = tuple(p for p in catalog.PROVIDERS if p.auth_type == "api_key" and p.id != "custom")
_CODEX_SIGN_IN = "POST /providers/openai-codex/oauth/browser/start"


def _any_provider() -> str:
    """Every way to get a model, each named: a 503 says exactly what to call."""
    first, *rest = (p.id for p in _KEYED)
    return (
        f"connect a provider with POST /providers/{first}/connect (or {', '.join(rest)}"
        f" in place of {first}), sign in to openai-codex with {_CODEX_SIGN_IN},"
        " or add an OpenAI-compatible model with POST /models/custom"
    )


_NOTHING_USABLE = f"No chat model is configured: {_any_provider()}."


@dataclass(frozen=True)
class Offer:
    """A model a connected provider offers."""

    provider: str
    info: ModelInfo


def split_ref(ref: str) -> tuple[str | None, str]:
    """``provider:model`` -> (provider, model); a bare id -> (None, id).

    Only a known provider id counts as a prefix, so ids such as Ollama's
    ``llama3:8b`` stay whole.
    """
    head, sep, tail = ref.partition(":")
    if sep and head in catalog.PROVIDER_IDS and tail:
        return head, tail
    return None, ref


class LLMService:
    def __init__(
        self,
        settings: Settings,
        kv: KVStore,
        secrets: SecretsStore,
        custom_store: CustomModelStore,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.settings = settings
        self.kv = kv
        self.credentials = Credentials(secrets, environ)
        self.custom = CustomModels(custom_store, self.credentials)
        self.oauth = CodexOAuth(settings, secrets)
        self.oauth.on_connected = self._codex_connected
        self.services = ExternalServices(settings, self.credentials)
        self._overrides: dict[str, ResolvedModel] = {}  # see override()
        self._cache: dict[tuple[Any, ...], ResolvedModel] = {}
        self.meter: UsageMeter | None = None  # see resolve()

    # -- the hand-off interface ------------------------------------------------

    async def resolve(self, role: Role) -> ResolvedModel:
        """The configured model for ``role``; research and memory fall back to chat.

        It carries the usage meter (``self.meter``, set by wiring), so every agent
        built on it has its requests checked against the budgets and recorded.
        """
        resolved = await self._resolve(role)
        if self.meter is None or resolved.meter is not None:
            return resolved
        return replace(resolved, meter=self.meter)

    async def _resolve(self, role: Role) -> ResolvedModel:
        if role in self._overrides:
            return self._overrides[role]
        ref = await self.kv.get(ROLE_KEYS[role])
        if not ref:
            if role != "chat":
                return await self._resolve("chat")
            raise NotConfigured(_NOTHING_USABLE)
        offer = await self.find(str(ref))
        if offer is None:
            raise NotConfigured(
                f"The {role} model '{ref}' is not offered by any connected provider: "
                f"{await self._how_to_offer(str(ref))}, or choose another model with PATCH /config."
            )
        return await self._build(offer)

    async def _how_to_offer(self, ref: str) -> str:
        """What would make ``ref`` usable again, naming the provider(s) that offer it."""
        wanted, model_id = split_ref(ref)
        steps: list[str] = []
        for info in catalog.PROVIDERS:
            if wanted not in (None, info.id):
                continue
            if info.id == "custom":
                if wanted == "custom":
                    steps.append("add it again with POST /models/custom")
                continue
            known = catalog.model(info.id, model_id) is not None
            if not known and model_id not in await self.remote_models(info.id):
                continue
            if info.id == "openai-codex":
                steps.append(f"sign in to openai-codex with {_CODEX_SIGN_IN}")
            else:
                steps.append(f"connect {info.name} with POST /providers/{info.id}/connect")
        return " or ".join(steps) if steps else _any_provider()

    @contextmanager
    def override(self, role: Role, model: ResolvedModel) -> Iterator[None]:
        """Within the ``with``, ``resolve(role)`` answers ``model``, whatever is configured.

        Like pydantic-ai's ``Agent.override``, for a caller that brings its own
        model (a scripted one in tests). It is held on the service, not in a
        context variable, so work started before the ``with`` (automations,
        memory extraction) sees it as well. On exit the model ``role`` had
        before, overridden or not, is back.
        """
        if role not in ROLE_KEYS:
            raise ValueError(f"unknown role {role!r}")
        before = self._overrides.get(role)
        self._overrides[role] = model
        try:
            yield
        finally:
            if before is None:
                self._overrides.pop(role, None)
            else:
                self._overrides[role] = before

    async def credential(self, provider: str) -> str | None:
        """The key (stored or from the environment) or, for openai-codex, the access token."""
        if provider == "openai-codex":
            if self.oauth.tokens() is None:
                return None
            token, _ = await self.oauth.access_token()
            return token
        info = catalog.provider(provider)
        if info is None or provider == "custom":
            return None
        return self.credentials.key("provider", provider, info.env_vars)

    def base_url(self, provider: str) -> str:
        urls = {
            "anthropic": self.settings.anthropic_base_url,
            "openai": self.settings.openai_base_url,
            "openai-codex": self.settings.codex_base_url,
            "google": self.settings.google_base_url,
            "openrouter": self.settings.openrouter_base_url,
        }
        if provider not in urls:
            raise ValueError(f"no base URL setting for provider {provider!r}")
        return urls[provider]

    async def service_credential(self, service: str) -> str | None:
        return self.services.credential(service)

    # -- what is usable --------------------------------------------------------

    def connected(self, provider: str) -> bool:
        """Whether a key-based or OAuth provider is usable (custom: see CustomModels)."""
        if provider == "openai-codex":
            return self.oauth.connected()
        info = catalog.provider(provider)
        if info is None or provider == "custom":
            return False
        return self.credentials.key("provider", provider, info.env_vars) is not None

    async def offers(self, provider: str) -> list[Offer]:
        """Models ``provider`` offers now (empty when it is not connected)."""
        if provider == "custom":
            return [Offer("custom", row) for row in await self.custom.infos()]
        info = catalog.provider(provider)
        if info is None or not self.connected(provider):
            return []
        return [Offer(provider, m) for m in info.models]

    async def find(self, ref: str) -> Offer | None:
        """The offer a model identifier names, or None when nothing connected offers it."""
        wanted, model_id = split_ref(ref)
        for provider in LOOKUP_ORDER if wanted is None else (wanted,):
            for offer in await self.offers(provider):
                if offer.info.id == model_id:
                    return offer
            remote = [] if provider == "custom" else await self.remote_models(provider)
            if model_id in remote and self.connected(provider):
                info = ModelInfo(
                    model_id, UNKNOWN_MODEL.context_window, UNKNOWN_MODEL.max_output_tokens
                )
                return Offer(provider, info)
        return None

    async def remote_models(self, provider: str) -> list[str]:
        value = await self.kv.get(REMOTE_MODELS_KEY + provider, [])
        return [str(v) for v in value] if isinstance(value, list) else []

    async def _build(self, offer: Offer) -> ResolvedModel:
        provider, info = offer.provider, offer.info
        account_id: str | None = None
        if provider == "custom":
            row = await self.custom.get(info.id)
            if row is None:
                raise NotConfigured(f"The custom model '{info.id}' was removed; choose another.")
            key, base = self.credentials.stored("custom", info.id), row.base_url
        elif provider == "openai-codex":
            key, account_id = await self.oauth.access_token()
            base = self.base_url(provider)
        else:
            key, base = await self.credential(provider), self.base_url(provider)
        cache_key = (provider, info, key, base, account_id)
        cached = self._cache.get(cache_key)
        if cached is not None:
            return cached
        model = build_model(provider, info.id, api_key=key, base_url=base, account_id=account_id)
        resolved = ResolvedModel(
            model_id=info.id,
            provider=provider,
            model=model,
            context_window=info.context_window,
            max_output_tokens=info.max_output_tokens,
            vision=info.vision,
            input_price_per_mtok=info.input_price_per_mtok,
            output_price_per_mtok=info.output_price_per_mtok,
        )
        self._cache[cache_key] = resolved
        return resolved

    async def default_chat_model_from_env(self) -> None:
        """At start-up: a provider connected by an environment key gets a chat model.

        Connecting through the API makes the provider's default the chat model
        when none is set; a key found in the environment must make chat usable
        just the same. The first such provider in catalog order wins.
        """
        if await self.role_ref("chat") is not None:
            return
        for info in _KEYED:
            if info.default_model and self.credentials.env_key(info.env_vars) is not None:
                await self.set_role("chat", info.default_model)
                log.info(
                    "chat model set to %s: %s is connected from the environment",
                    info.default_model,
                    info.name,
                )
                return

    async def _codex_connected(self) -> None:
        default = catalog.provider("openai-codex")
        if default is not None and default.default_model is not None:
            await self.ensure_chat_model(default.default_model)

    # -- roles -----------------------------------------------------------------

    async def role_ref(self, role: str) -> str | None:
        value = await self.kv.get(ROLE_KEYS[role])
        return str(value) if value else None

    async def set_role(self, role: str, ref: str | None) -> None:
        if ref is None:
            await self.kv.delete(ROLE_KEYS[role])
        else:
            await self.kv.set(ROLE_KEYS[role], ref)

    async def ensure_chat_model(self, ref: str) -> None:
        """Make ``ref`` the chat model when none is set, so a new model is usable at once."""
        if await self.role_ref("chat") is None:
            await self.set_role("chat", ref)

    async def require_offered(self, ref: str, field: str) -> Offer:
        offer = await self.find(ref)
        if offer is None:
            raise InvalidRequest(
                f"{field}: no connected provider offers the model '{ref}'; see GET /models"
                " for the models you can choose, or connect a provider first."
            )
        return offer

    def require_provider(self, provider: str) -> catalog.ProviderInfo:
        info = catalog.provider(provider)
        if info is None:
            raise NotFound(
                f"Unknown provider '{provider}'; the providers are: {', '.join(catalog.PROVIDER_IDS)}."
            )
        return info
