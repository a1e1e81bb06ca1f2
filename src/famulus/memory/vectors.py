"""The vector space in use: one embedder with its fact, observation and message indexes.

A ``Space`` is swapped whole when a re-index completes, so a recall always
embeds its query with the same model that produced the vectors it searches.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from famulus.errors import InvalidRequest
from famulus.memory.embeddings import (
    CATALOG,
    LOCAL_MODEL_ID,
    Embedder,
    EmbeddingModelInfo,
    GoogleEmbedder,
    LocalEmbedder,
    OpenAIEmbedder,
    find_model,
    local_embedder,
)
from famulus.memory.index import VectorIndex
from famulus.store.memory.vectors import VectorStore


@dataclass
class Space:
    embedder: Embedder
    facts: VectorIndex
    observations: VectorIndex
    # Chunks of past messages (conversation recall); never searched by fact recall.
    # A Space built without one (a benchmark's) gets an empty one of the right size.
    messages: VectorIndex = field(default_factory=lambda: VectorIndex(0))

    def __post_init__(self) -> None:
        if self.messages.dim != self.facts.dim:
            self.messages = VectorIndex(self.facts.dim)

    @property
    def model_id(self) -> str:
        return self.embedder.model_id

    def index(self, owner_type: str) -> VectorIndex:
        if owner_type == "message":
            return self.messages
        return self.facts if owner_type == "fact" else self.observations


async def load_space(store: VectorStore, embedder: Embedder) -> Space:
    dim = embedder.dimensions
    space = Space(embedder, VectorIndex(dim), VectorIndex(dim), VectorIndex(dim))
    for owner in ("fact", "observation", "message"):
        ids, matrix = await store.load(owner, embedder.model_id)
        if ids:
            space.index(owner).load(ids, matrix)
    return space


@dataclass(frozen=True)
class ReindexSnapshot:
    """A re-index or backfill as it stands (``model``/``error`` None when not known)."""

    status: str
    done: int
    total: int
    model: str | None
    error: str | None


@dataclass
class ReindexState:
    status: str = "idle"  # idle | running | completed | failed
    model: str | None = None
    done: int = 0
    total: int = 0
    error: str | None = None
    task: asyncio.Task[None] | None = field(default=None, repr=False)

    def snapshot(self) -> ReindexSnapshot:
        return ReindexSnapshot(
            self.status, self.done, self.total, self.model or None, self.error or None
        )


class EmbedderFactory:
    """Builds embedders; provider ones need the llm service for keys and base URLs."""

    def __init__(self, llm_getter: Any) -> None:
        self._llm = llm_getter

    async def available(self) -> list[tuple[EmbeddingModelInfo, bool]]:
        out = []
        for info in CATALOG:
            out.append((info, await self._usable(info)))
        return out

    async def _usable(self, info: EmbeddingModelInfo) -> bool:
        if info.provider == "local":
            return True
        return await self._credential(info.provider) is not None

    async def _credential(self, provider: str) -> str | None:
        llm = self._llm()
        if llm is None:
            return None
        try:
            key = await llm.credential(provider)
        except Exception:
            return None
        return str(key) if key else None

    async def build(self, model_id: str) -> Embedder:
        info = find_model(model_id)
        if info is None:
            known = ", ".join(m.id for m in CATALOG)
            raise InvalidRequest(f"Unknown embedding model {model_id!r}; choose one of {known}.")
        if info.provider == "local":
            return local_embedder(info.id)
        key = await self._credential(info.provider)
        if key is None:
            raise InvalidRequest(
                f"The {info.provider} provider is not connected; connect it before using"
                f" {model_id}."
            )
        base = str(self._llm().base_url(info.provider))
        cls = OpenAIEmbedder if info.provider == "openai" else GoogleEmbedder
        return cls(info, base, key)

    async def build_or_local(self, model_id: str | None) -> Embedder:
        """At start-up: the configured model, or the local one if it cannot be built."""
        if not model_id or model_id == LOCAL_MODEL_ID:
            return LocalEmbedder()
        try:
            return await self.build(model_id)
        except InvalidRequest:
            return LocalEmbedder()


def as_unit(vectors: np.ndarray) -> list[np.ndarray]:
    return [vectors[i] for i in range(vectors.shape[0])]
