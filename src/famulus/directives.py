"""Directives: the person's standing instructions, injected into every system prompt."""

from __future__ import annotations

from famulus.store.kv import KVStore

MAX_DIRECTIVES_CHARS = 20_000
_KEY = "directives"


class DirectivesService:
    def __init__(self, kv: KVStore) -> None:
        self.kv = kv

    async def get(self) -> str:
        value = await self.kv.get(_KEY, "")
        return str(value)

    async def put(self, content: str) -> str:
        await self.kv.set(_KEY, content)
        return content
