"""Connecting and disconnecting providers, adding and removing custom models.

These are the write paths behind /providers and /models/custom; they keep the
role models consistent (a new model becomes the chat model when none is set,
a removed custom model stops being a role model).
"""

from __future__ import annotations

from typing import Any

from famulus.errors import InvalidRequest
from famulus.llm import catalog, probe
from famulus.llm.credentials import key_hint
from famulus.llm.custom import CustomModelSpec
from famulus.llm.service import REMOTE_MODELS_KEY, ROLE_KEYS, LLMService, split_ref


class ProviderAdmin:
    def __init__(self, llm: LLMService) -> None:
        self.llm = llm

    async def list_all(self) -> list[dict[str, Any]]:
        custom_ids = [m.id for m in await self.llm.custom.infos()]
        out: list[dict[str, Any]] = []
        for info in catalog.PROVIDERS:
            entry: dict[str, Any] = {
                "id": info.id,
                "name": info.name,
                "auth_type": info.auth_type,
                "connected": False,
                "key_hint": None,
                "from_env": False,
                "models": [m.id for m in info.models],
            }
            if info.id == "custom":
                entry.update(connected=bool(custom_ids), models=custom_ids)
            elif info.id == "openai-codex":
                entry["connected"] = self.llm.oauth.connected()
            else:
                creds = self.llm.credentials
                key = creds.key("provider", info.id, info.env_vars)
                entry.update(
                    connected=key is not None,
                    key_hint=key_hint(key),
                    from_env=creds.env_key(info.env_vars) is not None,
                )
            out.append(entry)
        return out

    async def connect(self, provider: str, api_key: str, chat_model: str | None) -> None:
        """Check the key with the provider, then store it (nothing is stored on failure)."""
        info = self.llm.require_provider(provider)
        if provider == "custom":
            raise InvalidRequest(
                "The custom provider has no key of its own: add each model with"
                " POST /models/custom (model_id, base_url, context_window, max_output_tokens, api_key)."
            )
        if provider == "openai-codex":
            raise InvalidRequest(
                "openai-codex signs in through the browser: POST"
                " /providers/openai-codex/oauth/browser/start and open the returned url."
            )
        key = api_key.strip()
        if not key:
            raise InvalidRequest("api_key: must not be empty.")
        listed = await probe.check_key(provider, info.name, self.llm.base_url(provider), key)
        if chat_model is not None:
            self._check_chat_model(info, chat_model, listed)
        self.llm.credentials.store("provider", provider, key)
        await self.llm.kv.set(REMOTE_MODELS_KEY + provider, listed)
        if chat_model is not None:
            await self.llm.set_role("chat", chat_model)
        elif info.default_model is not None:
            await self.llm.ensure_chat_model(info.default_model)

    @staticmethod
    def _check_chat_model(info: catalog.ProviderInfo, ref: str, listed: list[str]) -> None:
        wanted, model_id = split_ref(ref)
        known = {m.id for m in info.models} | set(listed)
        if (wanted is not None and wanted != info.id) or model_id not in known:
            raise InvalidRequest(
                f"chat_model: {info.name} does not offer '{ref}'; nothing was stored."
                f" Its models include: {', '.join(sorted(m.id for m in info.models))}."
            )

    async def disconnect(self, provider: str) -> None:
        """Forget the stored credential; a key from the environment still applies."""
        self.llm.require_provider(provider)
        if provider == "custom":
            for model in await self.llm.custom.infos():
                await self.remove_custom(model.id)
        elif provider == "openai-codex":
            self.llm.oauth.disconnect()
        else:
            self.llm.credentials.forget("provider", provider)
            await self.llm.kv.delete(REMOTE_MODELS_KEY + provider)

    async def add_custom(self, spec: CustomModelSpec) -> None:
        await self.llm.custom.add(
            spec.model_id,
            spec.base_url,
            spec.context_window,
            spec.max_output_tokens,
            spec.api_key,
            spec.vision,
        )
        await self.llm.ensure_chat_model(spec.model_id)

    async def remove_custom(self, model_id: str) -> None:
        await self.llm.custom.remove(model_id)
        for role in ROLE_KEYS:
            if await self.llm.role_ref(role) in (model_id, f"custom:{model_id}"):
                await self.llm.set_role(role, None)
