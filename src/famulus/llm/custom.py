"""Custom OpenAI-compatible models: records in SQLite, optional keys in the secrets file."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from pydantic import BaseModel, Field

from famulus.errors import Conflict, InvalidRequest, NotFound
from famulus.llm.catalog import ModelInfo
from famulus.llm.credentials import Credentials
from famulus.store.llm import CustomModelRow, CustomModelStore

MODEL_ID_PATTERN = r"^[A-Za-z0-9._:/-]{1,200}$"
_MODEL_ID = re.compile(MODEL_ID_PATTERN)


class CustomModelSpec(BaseModel):
    """A custom model as a person describes it, checked field by field.

    Both ways to add one check it here, so they accept the same values: the
    HTTP body (``api.providers.CustomModelIn`` adds the strictness of a
    request body) and the agent's ``add_custom_model`` tool. The checks that
    need more than one field or the database are ``CustomModels.add``'s.
    """

    model_id: str = Field(min_length=1, max_length=200, pattern=MODEL_ID_PATTERN)
    base_url: str = Field(min_length=1, max_length=2048)
    context_window: int = Field(gt=0)
    max_output_tokens: int = Field(gt=0)
    api_key: str | None = Field(default=None, max_length=4096)
    vision: bool = False


def check_base_url(url: str) -> str:
    """An absolute http(s) URL; the trailing slash is dropped so paths join cleanly."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidRequest(
            "base_url: must be an absolute http(s) URL such as http://127.0.0.1:11434/v1."
        )
    if parts.username or parts.password:
        raise InvalidRequest("base_url: put credentials in api_key, not in the URL.")
    return url.strip().rstrip("/")


class CustomModels:
    def __init__(self, store: CustomModelStore, credentials: Credentials) -> None:
        self.store = store
        self.credentials = credentials

    async def infos(self) -> list[ModelInfo]:
        return [
            ModelInfo(r.model_id, r.context_window, r.max_output_tokens, r.vision)
            for r in await self.store.list()
        ]

    async def get(self, model_id: str) -> CustomModelRow | None:
        return await self.store.get(model_id)

    async def add(
        self,
        model_id: str,
        base_url: str,
        context_window: int,
        max_output_tokens: int,
        api_key: str | None,
        vision: bool,
    ) -> None:
        if not _MODEL_ID.match(model_id):
            raise InvalidRequest(
                "model_id: 1-200 characters of letters, digits and . _ : / - are allowed."
            )
        if context_window <= 0 or max_output_tokens <= 0:
            raise InvalidRequest("context_window and max_output_tokens must be positive integers.")
        if max_output_tokens >= context_window:
            raise InvalidRequest("max_output_tokens must be smaller than context_window.")
        url = check_base_url(base_url)
        if not await self.store.add(model_id, url, context_window, max_output_tokens, vision):
            raise Conflict(
                f"A custom model '{model_id}' already exists; remove it first with"
                f" DELETE /models/custom/{model_id} to change it."
            )
        if api_key:
            self.credentials.store("custom", model_id, api_key)
        else:
            self.credentials.forget("custom", model_id)

    async def remove(self, model_id: str) -> None:
        if not await self.store.remove(model_id):
            raise NotFound(f"No custom model '{model_id}'; GET /models lists the custom models.")
        self.credentials.forget("custom", model_id)
